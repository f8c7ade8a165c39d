"""``bench/record.py`` rewrites the results file from the run records: the latest run of each
workload, sections of unrecorded runs carried over until replaced, stale records deleted."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

RECORD = Path(__file__).resolve().parents[1] / "bench" / "record.py"

OLD = """\
# results

| (a) a ~300k-token agent conversation, request to ids: ≥10x faster than deepseek-recipe 0.2.0 | tokenize | 16x | old | **met** |

<!-- begin tokenize/run/20261130T024900Z -->
### Run of 2026-11-30 02:49 UTC
- recorded before the JSON files
<!-- end tokenize/run/20261130T024900Z -->

<!-- begin tokenize/a_chat/20261130T024900Z -->
#### (a) old chat table
<!-- end tokenize/a_chat/20261130T024900Z -->

<!-- begin tokenize/e_text/20261130T024900Z -->
#### (e) old text table
<!-- end tokenize/e_text/20261130T024900Z -->
"""


@pytest.fixture(scope="module")
def record() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_record", RECORD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(record: ModuleType, results: Path, minute: int, sections: dict[str, str], met: bool | None = None) -> Path:
    started = dt.datetime(2026, 12, 2, 3, minute, tzinfo=dt.timezone.utc)
    rec: dict[str, Any] = record.new_record("tokenize", started, "bash bench/run.sh", False)
    rec["header"] = [f"- run at minute {minute}"]
    rec["sections"] = {key: [f"#### {text}"] for key, text in sections.items()}
    if met is not None:
        rec["targets"]["e_vs_peer"] = {"measured": f"minute {minute}", "met": met}
    path: Path = record.save(rec, results)
    return path


def test_latest_run_per_workload(record: ModuleType, tmp_path: Path) -> None:
    results = tmp_path / "results.md"
    results.write_text(OLD)
    first = run(record, results, 1, {"e_text": "(e) new text table", "b_big": "(b) first"}, met=False)
    text = results.read_text()
    # (e) is replaced, (a) is carried over with its run's header, the old target row kept
    assert "(e) new text table" in text and "(e) old text table" not in text
    assert "(a) old chat table" in text and "- recorded before the JSON files" in text
    assert "| tokenize | 16x | old | **met** |" in text
    assert "| tokenize | minute 1 | 2026-12-02 03:01 UTC | not met |" in text
    # newest run first
    assert text.index("Run of 2026-12-02 03:01") < text.index("Run of 2026-11-30 02:49")
    assert json.loads(first.read_text())["sections"]["b_big"] == ["#### (b) first"]

    # rewriting changes nothing
    record.regenerate(results)
    assert results.read_text() == text

    # a run of (b) alone leaves (e) to the first run's record
    run(record, results, 2, {"b_big": "(b) second"})
    assert first.exists()
    text = results.read_text()
    assert "(b) second" in text and "(b) first" not in text and "(e) new text table" in text

    # a run of (e) too: the first record is shown nowhere and goes; so does the old (a) once replaced
    run(record, results, 3, {"e_text": "(e) third", "a_chat": "(a) third"}, met=True)
    assert not first.exists()
    text = results.read_text()
    assert "(a) old chat table" not in text and "recorded before the JSON files" not in text.split("## Targets")[1]
    assert "| tokenize | minute 3 | 2026-12-02 03:03 UTC | **met** |" in text
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [
        "tokenize-20261202T030200Z.json",
        "tokenize-20261202T030300Z.json",
    ]


def test_a_record_names_the_commit_it_measured(record: ModuleType, tmp_path: Path) -> None:
    """Each run records the checkout's commit (``-dirty`` with uncommitted changes) and shows it
    in its title; runs recorded before that keep their old title."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=RECORD.parent, capture_output=True, text=True, check=True
    ).stdout.strip()
    rec = record.new_record("tokenize", dt.datetime(2026, 12, 5, 8, 0, tzinfo=dt.timezone.utc), "x", False)
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", rec["commit"]) and rec["commit"].startswith(head)
    assert record.run_title(rec).startswith(f"### Run of 2026-12-05 08:00 UTC (commit `{head[:12]}")
    del rec["commit"]
    assert record.run_title(rec) == "### Run of 2026-12-05 08:00 UTC"
    # Outside a git checkout there is no commit to name.
    assert record.git_commit(tmp_path) == "unknown"
