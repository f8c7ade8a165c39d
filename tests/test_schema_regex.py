"""JSON-schema regex verdicts: the wheel's, on thousands of generated patterns, in linear time.

The table (``scripts/record/schema_regex.py``) holds, per pattern, whether the wheel compiles
it (2020-12 ``pattern``) and whether draft-07's ``format: "regex"`` accepts it (a draft-07
``patternProperties`` name: the error names the pattern when the format check fails, the
subschema when only compiling fails). The disagreements we keep are listed in
``docs/compatibility.md`` and pinned here by name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.growth import assert_linear_growth
from tests.reference import load_table
from tests.schema_regex_driver import DRAFT7, MODEL, compiles, ecma

MAX_GROUP_NAMES = 1000

TABLE: list[list[Any]] = load_table("schema_regex")


def group_names(pattern: str) -> int:
    return pattern.count("(?<") - pattern.count("(?<=") - pattern.count("(?<!")


# Where we knowingly differ (docs/compatibility.md): patterns with more than MAX_GROUP_NAMES
# group names are refused by both checks, and in verbose mode a `\cJ` inside a comment ends it.
KNOWN = {"(?x)#\\cJ(": (False, False)}


def expected(pattern: str, compiled: bool, ecma_ok: bool) -> tuple[bool, bool]:
    if group_names(pattern) > MAX_GROUP_NAMES:
        return (False, False)
    return KNOWN.get(pattern, (compiled, ecma_ok))


# Ours (docs/compatibility.md): a pattern longer than MAX_PATTERN_BYTES is refused by both
# checks, and one whose runs of repetitions would cost fancy-regex's optimizer more than
# MAX_OPTIMIZER_MOVES element moves (time quadratic in them) is not compiled.
MAX_PATTERN_BYTES = 1 << 20
MAX_OPTIMIZER_MOVES = 50_000_000
LONG_TABLE: list[list[Any]] = load_table("schema_regex_long")


def run_moves(count: int) -> int:
    """The optimizer's element moves for ``count`` repetitions in a row (``a*`` each): every
    window of three becomes two, moving what follows it."""
    moves, length, at, position = 0, count, 0, 0
    while at + 2 < count:
        moves += length - position - 3
        length, at, position = length - 1, at + 3, position + 2
    return moves


def long_expected(family: str, pattern: str, count: int, compiled: bool, ecma_ok: bool) -> tuple[bool, bool]:
    if len(pattern.encode()) > MAX_PATTERN_BYTES:
        return (False, False)
    if family in ("star_runs", "alternation_star_runs") and run_moves(count) > MAX_OPTIMIZER_MOVES:
        return (False, ecma_ok)
    return (compiled, ecma_ok)


def test_long_patterns_match_the_wheel_within_the_bounds() -> None:
    """The wheel's verdicts on long patterns (``scripts/record/schema_regex_long.py``): equal,
    but past the two bounds, where the wheel has none. Past them it refuses quickly."""
    differing = []
    for family, prefix, unit, count, suffix, compiled, ecma_ok in LONG_TABLE:
        pattern = prefix + unit * count + suffix
        want = long_expected(family, pattern, count, compiled, ecma_ok)
        got = (compiles(pattern), ecma(pattern))
        assert got == want, (family, count, got, want)
        if want != (compiled, ecma_ok):
            differing.append((family, count))
    # The wheel has no length limit: long verbose-mode and one-class patterns compile there.
    assert ("verbose_space", 4 * MAX_PATTERN_BYTES) in differing
    assert ("class_of_one_letter", MAX_PATTERN_BYTES - 1) in differing
    # ... and it compiles 100,000 `a*` in a row, after seconds of quadratic work.
    assert ("star_runs", 100_000) in differing and ("star_runs", 10_000) not in differing


@pytest.mark.parametrize("unit", ["(a|b)*", "a*", "(?:ab)*c?x*"])
def test_runs_of_repetitions_cost_time_linear_in_their_number(unit: str) -> None:
    """The attacker's pattern, ``(a|b)*`` many times over: fancy-regex's optimizer splices each
    rewritten window into the sequence, time quadratic in the repetitions (the wheel: 3.3 s for
    100,000, 14 s for 200,000). Past the budget the pattern is refused before compiling."""
    assert_linear_growth(pattern_cost(lambda n: {"type": "string", "pattern": unit * n}), 25_000)


def test_the_table_is_large_and_mixed() -> None:
    assert len(TABLE) >= 9000
    verdicts = {(bool(c), bool(e)) for _, c, e in TABLE}
    assert verdicts == {(True, True), (True, False), (False, True), (False, False)}


@pytest.mark.parametrize("part", range(4))
def test_verdicts_match_the_wheel(part: int) -> None:
    rows = TABLE[part::4]
    mismatches = []
    for pattern, compiled, ecma_ok in rows:
        got = (compiles(pattern), ecma(pattern))
        if got != expected(pattern, compiled, ecma_ok):
            mismatches.append((pattern[:80], got, (compiled, ecma_ok)))
    assert not mismatches, mismatches[:20]


def test_the_known_differences_are_the_only_ones() -> None:
    by_pattern = {p: (c, e) for p, c, e in TABLE}
    differing = [p for p, (c, e) in by_pattern.items() if expected(p, c, e) != (c, e)]
    assert len(differing) == 3, [d[:40] for d in differing]
    for pattern in KNOWN:
        assert by_pattern[pattern] != KNOWN[pattern]


def pattern_cost(schema_for: Callable[[int], dict[str, Any]]) -> Callable[[int], float]:
    texts: dict[int, str] = {}

    def cost(n: int) -> float:
        body = texts.setdefault(
            n,
            json.dumps(
                {
                    "model": MODEL,
                    "messages": [{"role": "user", "content": "json"}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema_for(n)}},
                }
            ),
        )
        start = time.process_time()
        try:
            dr.ChatCompletionRequest(body).convert(dr.ConversionOptions())
        except dr.ConversionError:
            pass
        return time.process_time() - start

    return cost


def descending_names(n: int) -> str:
    return "".join(f"(?<n{i:07d}>x)" for i in reversed(range(n)))


# Pattern units whose count a request controls, each a path the checks take per unit.
UNITS: dict[str, Callable[[int], str]] = {
    "digit_classes": lambda n: "\\d" * n,
    "space_classes": lambda n: "\\s" * n,
    "word_classes_in_classes": lambda n: "[\\w-]" * n,
    "control_escapes": lambda n: "\\cA" * n,
    "literals": lambda n: "a" * n,
    "groups": lambda n: "(a)" * n,
    "alternatives": lambda n: "|".join(f"a{i}" for i in range(n)),
    "lookarounds": lambda n: "(?=a)" * n,
    "back_references": lambda n: "(a)" + "\\1" * n,
    "class_set_syntax": lambda n: "[a&&b--c~~d]" * n,
    "unicode_escapes": lambda n: "\\u0041\\x42" * n,
    "properties": lambda n: "\\p{Lu}" * n,
    "counted_repetitions": lambda n: "a{2,3}" * n,
    "nested_groups": lambda n: "(?:a|(b))" * n,
    "names_below_the_limit": descending_names,
    "descending_names_past_the_limit": lambda n: descending_names(10 * n),
    "references_past_the_limit": lambda n: "(?<a>x)" + "\\k<a>" * (10 * n),
}


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("draft", ["2020-12", "draft-07"])
def test_pattern_checks_are_linear_in_pattern_length(unit: str, draft: str) -> None:
    make = UNITS[unit]

    def schema(n: int) -> dict[str, Any]:
        if draft == "draft-07":
            return {"$schema": DRAFT7, "pattern": make(n)}
        return {"pattern": make(n)}

    # 125 units: from a few hundred on, the engine's compile alone steps up or grows ~6x per
    # 4x for some units (capture groups, classes; the wheel's the same), while a quadratic
    # translation already shows here (the reference's costs 28x from 125 to 500 `\w`).
    # Group names are timed past the limit (1,250 to 5,000) and below it.
    assert_linear_growth(pattern_cost(schema), 125)


def test_names_below_the_limit_cost_at_most_a_few_times_plain_groups() -> None:
    """At the limit, the engines' sorted name lists cost little next to parsing the groups."""

    def best(pattern: str) -> float:
        cost = pattern_cost(lambda _: {"$schema": DRAFT7, "pattern": pattern})
        return min(cost(0) for _ in range(5))

    names = best(descending_names(MAX_GROUP_NAMES))
    plain = best("(x)" * MAX_GROUP_NAMES)
    assert names < 8 * plain, (names, plain)


@pytest.mark.parametrize(
    "schema_for",
    [
        lambda n: {
            "type": "object",
            "properties": {f"p{i}": {"type": "string", "pattern": f"^a{i}\\d+$"} for i in range(n)},
        },
        lambda n: {"type": "object", "patternProperties": {f"^p{i}\\w*$": {"type": "string"} for i in range(n)}},
        lambda n: {
            "$schema": DRAFT7,
            "type": "object",
            "patternProperties": {f"^p{i}\\w*$": {"type": "string"} for i in range(n)},
        },
    ],
    ids=["patterns", "pattern_properties", "draft07_pattern_properties"],
)
def test_pattern_checks_are_linear_in_the_number_of_patterns(schema_for: Callable[[int], dict[str, Any]]) -> None:
    assert_linear_growth(pattern_cost(schema_for), 500)
