"""Batch preprocessing throughput: ``deepseek_recipe.batch`` as a Ray Data stage against a plain
loop over the same requests, in one run on this machine.

    python bench/batch_bench.py                # ~20k requests, a few minutes on 2 cores
    python bench/batch_bench.py --quick        # ~2k requests
    python bench/batch_bench.py --no-record    # print only (by default the run is recorded: a JSON
                                               # file in bench/results/, bench/results.md rewritten)

The requests are workload (c) of the tokenization benchmark (``bench/workloads.py``: small
requests of the three protocols, some with tools, a tool round trip or thinking off) plus one
agent conversation of ~8k tokens in every 50, as JSON bodies in a pyarrow table. Both paths
run the same code (``PrepareBatch``: bodies to prompt ids, sampling settings and block hashes)
on the same batches of ``--batch-size`` rows:

- **plain loop**: one process calls the stage on each batch in turn (the Rust core still
  encodes long prompts on all cores);
- **Ray Data**: ``ray.data.from_arrow(...).map_batches(PrepareBatch, compute=ActorPoolStrategy
  (size=N))`` on a local Ray cluster with N = the CPU count, materialized; the actors' start
  (each builds its Frontend and loads the tokenizer) is inside the time, ``ray.init`` is not
  (reported apart). Ray also runs the first half of the batches alone: the full run's extra
  time over it gives the throughput past the fixed start-up cost (what a long job approaches),
  and the loop's time at half way gives its own.

Both outputs are checked to be identical. Reported: rows and prompt tokens per second, and
Ray ÷ plain. Ray, pyarrow and the bench's text generator are not dependencies of the library.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import record as R  # noqa: E402


def requests(count: int, seed: int) -> list[dict[str, Any]]:
    import workloads

    rows = [{"protocol": p, "body": b} for p, b in workloads.small_requests(seed, count)]
    rng = random.Random(seed)
    for k in range(0, count, 50):
        protocol = workloads.PROTOCOLS[k % 3]
        body = workloads.agent_requests(protocol, [rng.randrange(1 << 30)], 8_000)[0]
        rows[k] = {"protocol": protocol, "body": body}
    return [{"id": k, **row} for k, row in enumerate(rows)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="2,000 requests")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, help="Ray actors")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--no-record", action="store_true", help="print only: no record, bench/results.md untouched")
    parser.add_argument(
        "--results", type=Path, default=R.RESULTS, help="the results file to rewrite (records go to results/ beside it)"
    )
    args = parser.parse_args(argv)
    count = 2_000 if args.quick else args.rows
    command = ("python bench/batch_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    record = R.new_record("batch", dt.datetime.now(dt.timezone.utc), command, args.quick)

    import pyarrow as pa
    import ray

    from deepseek_recipe.batch import PrepareBatch

    started = time.perf_counter()
    table = pa.Table.from_pylist(requests(count, args.seed))
    print(f"# {count} requests generated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    batches = [table.slice(start, args.batch_size) for start in range(0, count, args.batch_size)]

    # The plain loop: one process, the same stage on every batch.
    started = time.perf_counter()
    stage = PrepareBatch(protocol=None)
    outputs, half_at = [], 0.0
    for k, batch in enumerate(batches):
        outputs.append(stage(batch))
        if k + 1 == len(batches) // 2:
            half_at = time.perf_counter() - started
    plain = pa.concat_tables(outputs)
    plain_seconds = time.perf_counter() - started
    tokens = sum(plain.column("prompt_tokens").fill_null(0).to_pylist())
    half_rows = sum(b.num_rows for b in batches[: len(batches) // 2])
    print(f"# plain loop: {plain_seconds:.2f} s", file=sys.stderr)

    started = time.perf_counter()
    ray.init(num_cpus=args.concurrency, include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_seconds = time.perf_counter() - started
    try:

        def run(tables: list[Any]) -> tuple[Any, float]:
            started = time.perf_counter()
            ds = ray.data.from_arrow(tables).map_batches(
                PrepareBatch,
                fn_constructor_kwargs={"protocol": None},
                batch_format="pyarrow",
                batch_size=args.batch_size,
                compute=ray.data.ActorPoolStrategy(size=args.concurrency),
            )
            out = pa.concat_tables(ray.get(ds.to_arrow_refs())).sort_by("id")
            return out, time.perf_counter() - started

        # Half the batches, then all of them: the difference is the work past the fixed cost
        # (actors starting and loading the tokenizer).
        _, ray_half_seconds = run(batches[: len(batches) // 2])
        ray_table, ray_seconds = run(batches)
    finally:
        ray.shutdown()
    print(f"# ray data: {ray_seconds:.2f} s", file=sys.stderr)
    same = ray_table.select(plain.column_names).equals(plain.sort_by("id"))
    marginal_rows = count - half_rows

    def past_startup(full: float, half: float) -> float | None:
        # On a loaded machine the half run can take as long as the full one: no figure then.
        return marginal_rows / (full - half) if full - half > 0.05 * full else None

    def rate(value: float | None) -> str:
        return "n/a" if value is None else f"{value:,.0f}"

    def ratio(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or b is None else f"{a / b:.2f}x"

    plain_marginal = past_startup(plain_seconds, half_at)
    ray_marginal = past_startup(ray_seconds, ray_half_seconds)

    lines = [
        "| path | wall s | requests/s | prompt Mtok/s | ÷ plain | past start-up: requests/s | ÷ plain |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| plain loop (1 process) | {plain_seconds:.2f} | {count / plain_seconds:,.0f} | "
        f"{tokens / plain_seconds / 1e6:.2f} | 1.00x | {rate(plain_marginal)} | "
        f"{ratio(plain_marginal, plain_marginal)} |",
        f"| Ray Data, {args.concurrency} actors | {ray_seconds:.2f} | {count / ray_seconds:,.0f} | "
        f"{tokens / ray_seconds / 1e6:.2f} | {plain_seconds / ray_seconds:.2f}x | {rate(ray_marginal)} | "
        f"{ratio(ray_marginal, plain_marginal)} |",
        "",
        f'{count} requests, {tokens:,} prompt tokens, batches of {args.batch_size}. "Past start-up": the '
        f"second half's requests over the time the full run took beyond the half run ({ray_half_seconds:.1f} s "
        f"for Ray, which includes starting the actors and loading the tokenizer in each), the same for the "
        f"loop. ray.init took {init_seconds:.1f} s (not counted). Outputs identical: {'yes' if same else 'NO'}.",
    ]
    m = record["machine"]
    m["load_end"] = R.loadavg()
    record["header"] = [
        f"- command: `{command}`",
        f"- machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']} RAM; {m['os']}; "
        f"load average {m['load_start']} at start, {m['load_end']} at end",
        f"- Ray {ray.__version__}, pyarrow {pa.__version__}",
    ]
    record["versions"] = {"ray": ray.__version__, "pyarrow": pa.__version__}
    record["sections"]["table"] = lines
    record["figures"] = {
        "requests": count,
        "prompt_tokens": tokens,
        "batch_size": args.batch_size,
        "actors": args.concurrency,
        "plain_s": plain_seconds,
        "plain_half_s": half_at,
        "ray_s": ray_seconds,
        "ray_half_s": ray_half_seconds,
        "ray_init_s": init_seconds,
        "plain_past_startup_rps": plain_marginal,
        "ray_past_startup_rps": ray_marginal,
        "ray_over_plain": plain_seconds / ray_seconds,
        "ray_over_plain_past_startup": (
            None if ray_marginal is None or plain_marginal is None else ray_marginal / plain_marginal
        ),
        "outputs_identical": bool(same),
    }
    print(R.render_run(record))
    if not args.no_record:
        R.save(record, args.results)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
