"""The vendored conformance corpus, run through the installed package.

Each file under ``requests/`` and ``outputs/`` holds one case and the result the public
``deepseek-recipe`` 0.2.0 produced for it. ``probe.py`` (vendored from the shared corpus)
drives our package exactly as it drove the reference; the results must be equal.

Our typed errors (``TokenizerError``, ``StreamError``, ``ConsumedError``) subclass the builtin
the wheel raises and add ``kind``; their records are compared as that builtin's
(``tests/reference.py``), so messages and classes are still checked exactly.

Cases the project does not pass yet are listed with a reason in ``known_failures.txt`` and
run as strict xfails: a listed case that starts passing fails the run until it is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import deepseek_recipe
from tests.conformance import probe
from tests.reference import as_reference_record

HERE = Path(__file__).parent


def _known_failures() -> dict[str, str]:
    known: dict[str, str] = {}
    path = HERE / "known_failures.txt"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                case_id, _, reason = line.partition(" ")
                known[case_id] = reason.strip() or "no reason given"
    return known


KNOWN = _known_failures()


def _cases(kind: str) -> list[Any]:
    params = []
    for path in sorted((HERE / kind).glob("*.json")):
        case_id = path.stem
        marks = [pytest.mark.xfail(reason=KNOWN[case_id], strict=True)] if case_id in KNOWN else []
        params.append(pytest.param(path, id=case_id, marks=marks))
    return params


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=True, indent=1)


@pytest.fixture(scope="module")
def ctx() -> probe.Ctx:
    return probe.Ctx(deepseek_recipe, "")


def _check(result: Any, expected: Any) -> None:
    # Our typed errors are recorded as the builtin they subclass (the wheel's class).
    got, want = _canon(as_reference_record(result)), _canon(expected)
    if got != want:
        import difflib

        diff = "\n".join(
            list(difflib.unified_diff(want.splitlines(), got.splitlines(), "expected", "got", lineterm=""))[:80]
        )
        pytest.fail("result differs from deepseek-recipe 0.2.0:\n" + diff, pytrace=False)


@pytest.mark.parametrize("path", _cases("requests"))
def test_request_case(ctx: probe.Ctx, path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    _check(probe.probe_request(ctx, data["case"]), data["expected"])


@pytest.mark.parametrize("path", _cases("outputs"))
def test_output_case(ctx: probe.Ctx, path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    _check(probe.probe_output(ctx, data["case"]), data["expected"])
