"""Errors at the Python edges read as the wheel's (table from ``scripts/record/python_edges.py``).

`resolve_max_tokens` takes u32 counts (larger ones raise `OverflowError`) and saturates the
prompt plus the budget; argument type errors carry the `argument 'name': ` prefix; values
JSON cannot hold are named by their type (`frozenset`, a set subclass's own name); the
missing-special-token error and the invalid-detail error quote the value as Rust's `Debug`
does, control characters escaped.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.python_edges_driver import namespace, outcome
from tests.reference import load_table

ROWS: list[list[Any]] = load_table("python_edges")
GROUPS = sorted({row[0] for row in ROWS})


def test_the_table_covers_every_edge() -> None:
    assert GROUPS == ["arguments", "details", "json_values", "resolve_max_tokens", "special_tokens"]
    kinds = Counter(row[2][0] for row in ROWS)
    for kind in ("ok", "OverflowError", "TypeError", "ValueError", "ConversionError", "RuntimeError"):
        assert kinds[kind] >= 5, kinds
    assert all(row[2][1].startswith("argument '") for row in ROWS if row[0] == "arguments" and row[2][0] == "TypeError")


@pytest.mark.parametrize("group", GROUPS)
def test_edges_match_the_wheel(group: str) -> None:
    names = namespace(dr, dr.default_tokenizer())
    rows = [(expression, want) for g, expression, want in ROWS if g == group]
    mismatches = [(e, got, want) for e, want in rows if (got := outcome(e, names)) != want]
    assert not mismatches, mismatches[:10]
