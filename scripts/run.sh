#!/usr/bin/env bash
# Install the package and run its main job: the gateway (`deepseek-recipe serve`) with its
# embedded demo engine on http://127.0.0.1:8000. Extra arguments go to `serve`
# (`bash scripts/run.sh --help` lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
make_venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q .
exec "$VENV/bin/deepseek-recipe" serve "$@"
