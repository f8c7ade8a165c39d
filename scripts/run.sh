#!/usr/bin/env bash
# Install the package and run its main job: encode a sample request with the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
make_venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q .
echo "== rendered prompt (special tokens marked [[...]])"
"$VENV/bin/deepseek-recipe" render examples/chat_request.json
echo "== token ids"
"$VENV/bin/deepseek-recipe" encode examples/chat_request.json
