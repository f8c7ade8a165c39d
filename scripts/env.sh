# Shared settings for scripts/*.sh (sourced, not run).
VENV="${VENV:-$PWD/.venv}"
WHEELS="${WHEELS:-$PWD/target-wheels}"
# Rust builds are slow on small machines: keep the target dir outside the checkout so
# repeated runs from fresh clones reuse it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/deepseek-recipe/target}"

make_venv() {
    if [ ! -x "$1/bin/python" ]; then
        python3 -m venv "$1"
    fi
}
