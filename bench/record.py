"""How the benches record a run: one JSON file per run, and bench/results.md rewritten from them.

    python3 bench/record.py [--results PATH]   # rewrite bench/results.md from bench/results/*.json

Every bench (``tokenize_bench.py``, ``stream_bench.py``, ``gateway_bench.py``, ``route_sim.py``,
``batch_bench.py``, ``stored_bench.py``, ``vllm_transport_bench.py``, ``server_bench.py``) builds a record of its
run (``new_record``): the date, the command, the machine (CPUs, CPU model, load average), the
git commit it measured (``-dirty`` when the checkout had uncommitted changes), the versions,
every figure and ratio it measured, and
the markdown it printed, cut into one section per workload, plus its measure of each target it
checks. ``save`` writes the record to ``bench/results/<bench>-<UTC stamp>.json`` and rewrites
``bench/results.md``: a short header, the targets table, and per bench the latest run of each
workload (its section from the newest record that has it), grouped by run, newest first.
Nothing is appended: a record that no section shows any more is deleted (git history keeps it).

Sections of runs made before the records existed have no JSON: they stand in results.md
between ``<!-- begin KEY -->`` and ``<!-- end KEY -->`` lines and are carried over as written
until a recorded run replaces them; so is the hand-written image section. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results.md"

# (bench, heading in results.md, its sections in order)
BENCHES: list[tuple[str, str, list[str]]] = [
    (
        "tokenize",
        "Tokenization: `bash bench/run.sh` (`bench/tokenize_bench.py`)",
        ["a_chat", "a_responses", "a_messages", "b_big", "c_small", "d_grow", "e_text"],
    ),
    ("stream", "Streaming: `bash bench/run.sh --stream` (`bench/stream_bench.py`)", ["1", "2", "3"]),
    (
        "gateway",
        "Gateway: `python3 bench/gateway_bench.py`",
        ["small", "small_slow", "agent", "agent_messages", "paced", "grpc", "intake", "pause"],
    ),
    ("stored", "Stored responses: `python3 bench/stored_bench.py`", ["turn", "storage"]),
    (
        "vllm_transport",
        "A real vLLM receiving a long prompt as JSON and as gRPC: `$VLLM/bin/python bench/vllm_transport_bench.py`",
        ["table"],
    ),
    ("server", "The HTTP server under the gateway: `python3 bench/server_bench.py`", ["table"]),
    ("route_sim", "Routing simulator: `python bench/route_sim.py`", ["table"]),
    ("batch", "Batch preprocessing on Ray Data: `python bench/batch_bench.py`", ["table"]),
    ("image", "Image preprocessing (`bench/image_bench.py`; written by hand, no record)", ["table"]),
]

# (key, bench, the section whose run measures it, the target): the benches fill in
# record["targets"][key] = {"measured": text, "met": bool}
TARGETS: list[tuple[str, str, str, str]] = [
    (
        "a_vs_ref",
        "tokenize",
        "a_chat",
        "(a) a ~300k-token agent conversation, request to ids: ≥10x faster than deepseek-recipe 0.2.0",
    ),
    (
        "e_vs_peer",
        "tokenize",
        "e_text",
        "(e) raw text, one core: within 20% of the fastest exact peer's time (aim 10%; the gap is accepted for now)",
    ),
    (
        "turn_cost",
        "gateway",
        "agent",
        "a new turn of a ~300k-token agent conversation: the gateway adds at most 3x encoding its new text alone",
    ),
    (
        "stored_turn",
        "stored",
        "turn",
        "a new turn of a ~300k-token conversation continued with previous_response_id: the gateway adds at "
        "most 3x encoding its new text alone, storage included (SQLite and PostgreSQL)",
    ),
    ("ttfb", "gateway", "small", "small requests: the gateway adds at most 0.5 ms to TTFB p50"),
    ("vs_litellm", "gateway", "small", "small requests: the gateway's added TTFB at least 10x below LiteLLM's"),
    (
        "turn_vs_litellm",
        "gateway",
        "agent",
        "a new turn of a ~300k-token agent conversation: the gateway's added time at least 10x below LiteLLM's",
    ),
    (
        "routing",
        "route_sim",
        "table",
        "prefix router: hit rate within 10% of the oracle's, load imbalance under 1.3x",
    ),
]

HEADER = """\
# Benchmark results

The latest run of each workload of each bench. The benches write this file themselves when
they record a run (the default; `--no-record` prints only): each run leaves its raw figures in
one JSON file under `bench/results/`, and this file is rewritten from those files, not appended
to. Do not edit it by hand; `python3 bench/record.py` rewrites it from the JSON files. Older
runs are in git history. How to run each bench and read its tables: `bench/README.md`.

Sections marked "recorded before the JSON files" come from runs made before this scheme: their
figures exist only here and in git history. They stay until a new run of the same workload
replaces them.
"""

BLOCK = re.compile(r"^<!-- begin (\S+) -->\n(.*?)^<!-- end \1 -->\n", re.M | re.S)


def stamp_of(started: dt.datetime) -> str:
    return started.strftime("%Y%m%dT%H%M%SZ")


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> dict[str, str]:
    """CPU count and model, memory, OS and Python of this machine, and its load average now."""
    cpu = mem = "?"
    try:
        cpu = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            platform.machine() or "?",
        )
        for ln in Path("/proc/meminfo").read_text().splitlines():
            if ln.startswith("MemTotal"):
                mem = f"{int(ln.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_start": loadavg(),
    }


def git_commit(repo: Path = BENCH) -> str:
    """The commit checked out in ``repo`` (``-dirty`` when it has uncommitted changes to
    tracked files), or ``unknown`` outside a git checkout."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def new_record(bench: str, started: dt.datetime, command: str, quick: bool) -> dict[str, Any]:
    """The skeleton every bench fills in: "header" (markdown lines under the run's title),
    "sections" ({workload: markdown lines}), "targets", "figures" (the raw numbers)."""
    return {
        "bench": bench,
        "stamp": stamp_of(started),
        "date": f"{started:%Y-%m-%d %H:%M} UTC",
        "quick": quick,
        "command": command,
        "commit": git_commit(),
        "machine": machine(),
        "versions": {},
        "header": [],
        "sections": {},
        "targets": {},
        "figures": {},
    }


def begin(bench: str, command: str) -> tuple[dict[str, Any], Callable[..., None]]:
    """A record of a run of ``bench`` starting now (not quick), its title printed, and ``say``:
    print a line and add it to the record's header, which begins with the command and the
    machine."""
    record = new_record(bench, dt.datetime.now(dt.timezone.utc), command, False)
    say = _printer(record["header"])
    print(run_title(record) + "\n", flush=True)
    m = record["machine"]
    say(f"- command: `{command}`")
    say(f"- machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']} RAM; load average {m['load_start']} at start")
    return record, say


def section(record: dict[str, Any], name: str) -> Callable[..., None]:
    """``add``: print a line and add it to the record's section ``name`` (made empty now)."""
    record["sections"][name] = []
    return _printer(record["sections"][name])


def _printer(lines: list[str]) -> Callable[..., None]:
    def add(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    return add


def run_date(record: dict[str, Any]) -> str:
    return f"{record['date']}{' (quick)' if record.get('quick') else ''}"


def run_title(record: dict[str, Any]) -> str:
    commit = record.get("commit")  # records made before commits were recorded have none
    if not commit:
        return f"### Run of {run_date(record)}"
    short = commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")
    return f"### Run of {run_date(record)} (commit `{short}`)"


def render_run(record: dict[str, Any]) -> str:
    """The whole run as the bench prints it."""
    lines = [run_title(record), "", *record["header"]]
    for section in record["sections"].values():
        lines += ["", *section]
    names = {key: text for key, _, _, text in TARGETS}
    if record["targets"]:
        lines += ["", "#### Targets (this run)", ""]
        for key, t in record["targets"].items():
            lines.append(f"- {names.get(key, key)}: {t['measured']} ({'met' if t['met'] else 'NOT MET'})")
    return "\n".join(lines).rstrip() + "\n"


def load_records(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"record: skipped {path}: {e}", file=sys.stderr)
            continue
        if isinstance(record, dict) and "bench" in record and "sections" in record:
            out.append((path, record))
    return out


def block(key: str, lines: list[str]) -> list[str]:
    """`lines` between the markers that let a later rewrite find them (blank ends dropped)."""
    text = "\n".join(lines).strip("\n").split("\n")
    return [f"<!-- begin {key} -->", *text, f"<!-- end {key} -->"]


def regenerate(results: Path = RESULTS) -> list[Path]:
    """Rewrite `results` from the records beside it (``results/*.json``) and the carried-over
    blocks it holds now; delete the records no section shows. Returns the deleted files."""
    folder = results.parent / "results"
    records = load_records(folder) if folder.is_dir() else []
    old = results.read_text(encoding="utf-8") if results.exists() else ""
    carried = {m.group(1): m.group(2).rstrip("\n").split("\n") for m in BLOCK.finditer(old)}
    used: set[Path] = set()
    latest: dict[tuple[str, str], dict[str, Any]] = {}  # (bench, section) -> record

    out = [HEADER, "## Targets", ""]
    out += ["| target | bench | measured | run | met? |", "|---|---|---|---|---|"]
    old_rows = {ln.split(" | ")[0][2:]: ln for ln in old.splitlines() if ln.startswith("| ")}
    for bench, _, sections in BENCHES:
        for section in sections:
            having = [(p, r) for p, r in records if r["bench"] == bench and section in r["sections"]]
            if having:
                path, record = max(having, key=lambda pr: pr[1]["stamp"])
                latest[(bench, section)] = record
                used.add(path)
    for key, bench, section, text in TARGETS:
        source = latest.get((bench, section))
        if source is not None and key in source["targets"]:
            t = source["targets"][key]
            verdict = "**met**" if t["met"] else "not met"
            out.append(f"| {text} | {bench} | {t['measured']} | {run_date(source)} | {verdict} |")
        elif source is not None:
            out.append(f"| {text} | {bench} | not measured | {run_date(source)} | - |")
        elif text in old_rows:
            out.append(old_rows[text])  # from a run recorded before the JSON files
        else:
            out.append(f"| {text} | {bench} | no run recorded yet | - | - |")

    for bench, heading, sections in BENCHES:
        # section -> (stamp, lines); a record's stamp or a carried block's
        chosen: dict[str, tuple[str, list[str]]] = {}
        headers: dict[str, list[str]] = {}
        for section in sections:
            source = latest.get((bench, section))
            if source is not None:
                chosen[section] = (source["stamp"], source["sections"][section])
                headers[source["stamp"]] = [run_title(source), "", *source["header"]]
                continue
            kept = sorted(key for key in carried if key.startswith(f"{bench}/{section}/"))
            if kept:  # from a run recorded before the JSON files
                stamp = kept[-1].rsplit("/", 1)[1]
                chosen[section] = (stamp, carried[kept[-1]])
                headers[stamp] = carried.get(f"{bench}/run/{stamp}", [])
        if not chosen:
            continue
        out += ["", f"## {heading}"]
        for stamp in sorted(headers, reverse=True):
            out += ["", *block(f"{bench}/run/{stamp}", headers[stamp])]
            for section in sections:
                if section in chosen and chosen[section][0] == stamp:
                    out += ["", *block(f"{bench}/{section}/{stamp}", chosen[section][1])]
    results.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    removed = [p for p, _ in records if p not in used]
    for path in removed:
        path.unlink()
    return removed


def save(record: dict[str, Any], results: Path = RESULTS) -> Path:
    """Write the run's record and rewrite `results` (see the module's docstring)."""
    record["machine"].setdefault("load_end", loadavg())
    folder = results.parent / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['bench']}-{record['stamp']}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    removed = regenerate(results)
    print(f"recorded {path}; rewrote {results}", file=sys.stderr)
    for p in removed:
        print(f"  deleted {p.name}: no section of {results.name} shows it any more", file=sys.stderr)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    for path in regenerate(args.results):
        print(f"deleted {path}: no section shows it any more", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
