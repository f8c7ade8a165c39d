"""Malformed and hostile requests get the documented error in bounded time; nothing panics.

A Rust panic would surface as ``pyo3_runtime.PanicException``, a ``BaseException`` that a
gateway's ``except Exception`` does not catch; every failure here must be an ``Exception``.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.growth import assert_linear_growth

MODEL = "DeepSeek-V4-Pro"
PROTOCOLS: list[Callable[[Any], Any]] = [dr.ChatCompletionRequest, dr.ResponsesRequest, dr.MessagesRequest]


def nested_dicts(depth: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}
    node = body
    for _ in range(depth - 1):
        child: dict[str, Any] = {}
        node["x"] = child
        node = child
    return body


def convert_chat(body: Any) -> Any:
    return dr.ChatCompletionRequest(body).convert(dr.ConversionOptions())


def test_python_tree_depth_limit_is_128() -> None:
    convert_chat(nested_dicts(128))
    with pytest.raises(RecursionError, match="maximum nesting depth of 128"):
        dr.ChatCompletionRequest(nested_dicts(129))


def test_json_text_depth_is_limited_without_recursion_crash() -> None:
    text = '{"model":"m","messages":' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ValueError, match="recursion limit exceeded"):
        dr.ChatCompletionRequest(text)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ({1, 2}, TypeError, "set is not a JSON value"),
        (float("nan"), ValueError, "NaN is not a finite JSON number"),
        (float("inf"), ValueError, "inf is not a finite JSON number"),
        (2**64, OverflowError, "integer is outside the JSON number range"),
        (-(2**63) - 1, OverflowError, "integer is outside the JSON number range"),
        (object(), TypeError, "object is not a JSON value"),
        (b"raw", TypeError, "bytes is not a JSON value"),
    ],
)
def test_python_values_json_cannot_hold(value: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        dr.ChatCompletionRequest({"model": MODEL, "messages": [], "x": value})


def test_cycles_and_non_str_keys() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="circular reference in JSON input"):
        dr.ChatCompletionRequest({"model": MODEL, "messages": cyclic})
    int_keyed: dict[Any, Any] = {"model": MODEL, "messages": []}
    int_keyed[1] = 2
    with pytest.raises(TypeError, match="JSON object keys must be str"):
        dr.ChatCompletionRequest(int_keyed)
    shared = {"role": "user", "content": "same"}
    convert_chat({"model": MODEL, "messages": [shared, {"role": "assistant", "content": "a"}, shared]})


@pytest.mark.parametrize(
    "raw",
    [b"\xff\xfe\xfd", b'{"model": "m", "messages": [{"role": "user", "content": "\xc3\x28"}]}', b"", b"{", b"[1,]"],
)
@pytest.mark.parametrize("cls", PROTOCOLS)
def test_invalid_bytes_are_value_errors(cls: Callable[[Any], Any], raw: bytes) -> None:
    with pytest.raises(ValueError, match="invalid JSON request"):
        cls(raw)


ANY_PROTOCOL: list[Any] = [None, 12, "x", [], [1, 2], True, {"model": 1, "messages": [], "input": "x"}]
CHAT_OR_MESSAGES: list[Any] = [
    {"model": MODEL, "messages": 5},
    {"model": MODEL, "messages": [{"role": "user", "content": None}]},
    {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "bogus"}]}]},
    {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "temperature": "hot"},
    {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": -1},
]
RESPONSES: list[Any] = [
    {"model": MODEL, "input": {"a": 1}},
    {"model": MODEL, "input": [{"role": "user", "content": None}]},
    {"model": MODEL, "input": [{"role": "user", "content": [{"type": "bogus"}]}]},
    {"model": MODEL, "input": "x", "temperature": "hot"},
    {"model": MODEL, "input": "x", "max_output_tokens": -1},
]
WRONG_TYPES = (
    [(cls, body) for cls in PROTOCOLS for body in ANY_PROTOCOL]
    + [(cls, body) for cls in (dr.ChatCompletionRequest, dr.MessagesRequest) for body in CHAT_OR_MESSAGES]
    + [(dr.ResponsesRequest, body) for body in RESPONSES]
)


@pytest.mark.parametrize(
    ("cls", "body"), WRONG_TYPES, ids=lambda v: json.dumps(v)[:40] if not callable(v) else v.__name__
)
def test_wrong_types_are_clear_value_errors(cls: Callable[[Any], Any], body: Any) -> None:
    with pytest.raises(ValueError, match="invalid request body"):
        cls(json.dumps(body))


def test_semantic_errors_carry_status_and_body() -> None:
    with pytest.raises(dr.ConversionError) as info:
        convert_chat({"model": "nope", "messages": [{"role": "user", "content": "x"}]})
    err = info.value
    assert err.status_code == 400
    body = json.loads(err.body)
    assert body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"] == str(err)


def test_huge_strings_convert_render_and_encode(tokenizer: dr.Tokenizer) -> None:
    text = "word <｜User｜> 中文 " * 200_000  # ~3.6 MB of text
    converted = convert_chat({"model": MODEL, "messages": [{"role": "user", "content": text}]})
    encoding = dr.DeepseekV4Encoding().with_tokenizer(tokenizer)
    assert text in encoding.render_conversation(converted.conversation).prompt
    ids = encoding.encode(converted.conversation)
    assert ids.count(128803) == 1  # only the template's User token; the 200,000 typed ones stay text


def test_linear_growth_of_conversion_and_encoding(tokenizer: dr.Tokenizer) -> None:
    """No quadratic path on long text, from request to ids."""

    calls = itertools.count()

    def cost(n: int) -> float:
        # Every call sends text no earlier call sent, so the prompt, gap and list caches cannot
        # answer it: this times the cold path, which is what must stay linear.
        unit = f"lorem{next(calls)} ipsum dolor 12345 "
        body = {"model": MODEL, "messages": [{"role": "user", "content": unit * n}]}
        start = time.process_time()
        converted = convert_chat(body)
        dr.DeepseekV4Encoding().with_tokenizer(tokenizer).encode(converted.conversation)
        return time.process_time() - start

    assert_linear_growth(cost, 20_000)


def test_many_messages_stay_linear() -> None:
    def cost(n: int) -> float:
        msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)]
        start = time.process_time()
        converted = convert_chat({"model": MODEL, "messages": msgs + [{"role": "user", "content": "end"}]})
        dr.DeepseekV4Encoding().render_conversation(converted.conversation)
        return time.process_time() - start

    assert_linear_growth(cost, 5_000)
