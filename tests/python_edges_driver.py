"""The driver that recorded the Python-edge table, and that replays it.

`scripts/record/python_edges.py` evaluates each expression under the public deepseek-recipe
0.2.0 wheel to record `reference_tables/python_edges.json.gz`; `test_python_edges.py` evaluates
the same expressions under this project. Both use the names and the outcome rule below.
"""

from __future__ import annotations

import json
from typing import Any

from tests.reference import reference_class_name

U32 = 2**32 - 1


# Subclasses of the built-in types, to see which arguments accept them; the recorded messages
# name them.
class S(set[Any]): ...


class FS(frozenset[Any]): ...


class D(dict[str, Any]): ...


class T(tuple[Any, ...]): ...


class St(str): ...


class I(int): ...  # noqa: E742 - the name the recorded messages use


class F(float): ...


def namespace(dr: Any, tok: Any) -> dict[str, Any]:
    """What the expressions may use: the package `dr`, a DeepSeek V4 tokenizer and helpers."""

    def req(max_tokens: int | None) -> Any:
        body: dict[str, Any] = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x"}]}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        options = dr.ConversionOptions(thinking_max_tokens_upper_bound=U32)
        return dr.ChatCompletionRequest(json.dumps(body)).convert(options)

    def encode_with(spelling: str) -> Any:
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
    """``["ok", what]`` or ``[exception class the wheel raises, message]``."""
    try:
        value = eval(expression, dict(names))
    except Exception as error:
        return [reference_class_name(error), str(error)]
    if isinstance(value, list):
        return ["ok", len(value)]
    shown = repr(value)
    # Default reprs hold a memory address; the class name is what can be compared.
    return ["ok", type(value).__name__ if " at 0x" in shown else shown]
