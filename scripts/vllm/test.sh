#!/usr/bin/env bash
# The engine tests: the vLLM plugin inside a real vLLM, the gateway in front of it, and a sample
# of the differential table, in vLLM's own virtualenv (scripts/vllm/env.sh; cached). Each test
# module starts its vLLM servers on loopback with a tiny model built at test time.
# Usage: bash scripts/vllm/test.sh WHEEL [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/../.."
wheel=${1:?usage: test.sh WHEEL [pytest args]}
shift
start=$SECONDS
venv=$(bash scripts/vllm/env.sh "$wheel" | tail -n 1)
echo "== vLLM environment ready in $((SECONDS - start)) s: $venv"
start=$SECONDS
DEEPSEEK_RECIPE_VLLM_TESTS=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/vllm "$@"
echo "== engine tests took $((SECONDS - start)) s"
