"""Errors at the Python edges read as the wheel's (table from ``scripts/record/python_edges.py``).

`resolve_max_tokens` takes u32 counts (larger ones raise `OverflowError`) and saturates the
prompt plus the budget; argument type errors carry the `argument 'name': ` prefix; values
JSON cannot hold are named by their type (`frozenset`, a set subclass's own name); the
missing-special-token error and the invalid-detail error quote the value as Rust's `Debug`
does, control characters escaped.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.reference import load_table

ROWS: list[list[Any]] = load_table("python_edges")
U32 = 2**32 - 1


class S(set[Any]): ...


class FS(frozenset[Any]): ...


class D(dict[str, Any]): ...


class T(tuple[Any, ...]): ...


class St(str): ...


class I(int): ...  # noqa: E742 - the name the recorded messages use


class F(float): ...


def namespace() -> dict[str, Any]:
    tok = dr.default_tokenizer()

    def req(max_tokens: int | None) -> dr.ConversationRequest:
        body: dict[str, Any] = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x"}]}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        options = dr.ConversionOptions(thinking_max_tokens_upper_bound=U32)
        return dr.ChatCompletionRequest(json.dumps(body)).convert(options)

    def encode_with(spelling: str) -> list[int]:
        encoding = dr.DeepseekV4Encoding().with_tokenizer(tok).with_special_tokens(dr.SpecialTokens(user=spelling))
        return encoding.encode(req(None).conversation)

    return {
        "dr": dr,
        "json": json,
        "tok": tok,
        "req": req,
        "encode_with": encode_with,
        "S": S,
        "FS": FS,
        "D": D,
        "T": T,
        "St": St,
        "I": I,
        "F": F,
    }


def outcome(expression: str, names: dict[str, Any]) -> list[Any]:
    try:
        value = eval(expression, dict(names))
    except Exception as error:
        return [type(error).__name__, str(error)]
    if isinstance(value, list):
        return ["ok", len(value)]
    shown = repr(value)
    return ["ok", type(value).__name__ if " at 0x" in shown else shown]


GROUPS = sorted({row[0] for row in ROWS})


def test_the_table_covers_every_edge() -> None:
    assert GROUPS == ["arguments", "details", "json_values", "resolve_max_tokens", "special_tokens"]
    kinds = Counter(row[2][0] for row in ROWS)
    for kind in ("ok", "OverflowError", "TypeError", "ValueError", "ConversionError", "RuntimeError"):
        assert kinds[kind] >= 5, kinds
    assert all(row[2][1].startswith("argument '") for row in ROWS if row[0] == "arguments" and row[2][0] == "TypeError")


@pytest.mark.parametrize("group", GROUPS)
def test_edges_match_the_wheel(group: str) -> None:
    names = namespace()
    rows = [(expression, want) for g, expression, want in ROWS if g == group]
    mismatches = [(e, got, want) for e, want in rows if (got := outcome(e, names)) != want]
    assert not mismatches, mismatches[:10]
