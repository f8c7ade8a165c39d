#!/usr/bin/env bash
# Tokenization benchmark: this project against deepseek-recipe 0.2.0, HF tokenizers,
# fastokens and gigatoken, in one run. Bench-only virtualenvs are created under bench/.
# Usage: bash bench/run.sh [--quick] [--project-python PATH] [--only a,b,c,d,e] [--no-record]
#
# Streaming benchmark (StreamProcessor.push, this project against deepseek-recipe 0.2.0):
#        bash bench/run.sh --stream [--quick] [--only 1,2,3] [--protocols chat,responses,messages]
# Both, one after the other:
#        bash bench/run.sh --all [--quick] [--no-record]   (only options both benches know)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  --stream) shift; exec python3 bench/stream_bench.py "$@" ;;
  --all)
    shift
    status=0
    python3 bench/tokenize_bench.py "$@" || status=$?
    python3 bench/stream_bench.py "$@" || { s=$?; [ "$status" -ne 0 ] || status=$s; }
    exit "$status" ;;
  *) exec python3 bench/tokenize_bench.py "$@" ;;
esac
