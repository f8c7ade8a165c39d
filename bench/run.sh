#!/usr/bin/env bash
# Tokenization benchmark: this project against deepseek-recipe 0.2.0, HF tokenizers,
# fastokens and gigatoken, in one run. Bench-only virtualenvs are created under bench/.
# Usage: bash bench/run.sh [--quick] [--project-python PATH] [--only a,b,c,d,e] [--no-record]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/tokenize_bench.py "$@"
