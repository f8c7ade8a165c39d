"""The way back, through the public API: chunking never matters, deltas add up to the whole,
and a misbehaving model still ends with each protocol's terminal events.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deepseek_recipe as dr

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    }
]
CHAT = {"model": "DeepSeek-V4.1-Flash", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
RESPONSES = {"model": "DeepSeek-V4.1-Flash", "input": "hi", "tools": [{"type": "function", **TOOLS[0]["function"]}]}  # type: ignore[dict-item]
MESSAGES = {
    "model": "DeepSeek-V4.1-Flash",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"name": "get_weather", "input_schema": TOOLS[0]["function"]["parameters"]}],
}  # type: ignore[index]
PROTOCOLS: list[tuple[Any, Any, dict[str, Any]]] = [
    (dr.ChatCompletionRequest, dr.ChatCompletionResponse, CHAT),
    (dr.ResponsesRequest, dr.ResponsesResponse, RESPONSES),
    (dr.MessagesRequest, dr.MessagesResponse, MESSAGES),
]

D = "｜DSML｜"
CALL = (
    f'\n\n<{D} calls>\n<{D} invoke name="get_weather">\n'
    f'<{D} parameter name="city" string="true">Pa"ri\\s <b> </DSML> </parameter x 中文 😀</{D} parameter>\n'
    f'<{D} parameter name="days" string="false">3</{D} parameter>\n</{D} invoke>\n</{D} calls>'
)
OUTPUTS = [
    "Let me think 🤔 about <this>.\n\n</think>\n\nThe answer is 42 — 答案.",
    "short</think>" + CALL,
    "a</think>pre" + CALL + "trailing text is dropped",
    "reasoning only, never closed </thin",
    "x</think>"
    + f'<{D} calls>\n<{D} invoke name="get_weather">\n<{D} parameter name="city" string="true">unterminated',
    "x</think>"
    + f'<{D} calls>\n<{D} invoke name="get_weather">\n<{D} parameter name="days" string="false">not json</{D} parameter>',
    "x</think>ok<｜end▁of▁sentence｜>after EOS <｜User｜><｜Assistant｜> garbage",
]
IDS = re.compile(r"call_(\d+)_(ET_)?[A-Za-z0-9]{24}")
TIMES = re.compile(r'"(created_at|completed_at)":\d+')


def run(protocol: tuple[Any, Any, dict[str, Any]], pieces: list[str], finish: Any = None) -> tuple[list[Any], str]:
    request_cls, response_cls, body = protocol
    converted = request_cls(body).convert(dr.ConversionOptions())
    processor = dr.StreamProcessor(request_cls.chunk_generator(converted, "resp-1", "m"), converted.parsing_options)
    events = list(
        processor.push(dr.InferenceChunk.ready(prompt_usage=dr.PromptUsage(prompt_tokens=5, prompt_cache_hit_tokens=1)))
    )
    for piece in pieces:
        if processor.finished:
            break
        events += processor.push(dr.InferenceChunk.text(piece, len(piece)))  # usage independent of chunking
    if finish is not None and not processor.finished:
        events += processor.push(dr.InferenceChunk.finish(finish))
    events += processor.finish()
    texts = [e.to_json() for e in events]
    response = response_cls("resp-1", "m", 1700000000, 5, 1)
    for e in events:
        response.accumulate(e)
    return texts, TIMES.sub(r'"\1":0', IDS.sub(r"call_\1_\2ID", response.to_json()))


def split(text: str, cuts: list[int]) -> list[str]:
    bounds = [0] + sorted({c % (len(text) + 1) for c in cuts}) + [len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(OUTPUTS), st.lists(st.integers(min_value=0), max_size=40), st.sampled_from(range(3)))
def test_chunking_never_changes_the_accumulated_response(output: str, cuts: list[int], which: int) -> None:
    protocol = PROTOCOLS[which]
    _, whole = run(protocol, [output], dr.InferenceFinishReason.Stop)
    _, chunked = run(protocol, split(output, cuts), dr.InferenceFinishReason.Stop)
    _, by_char = run(protocol, list(output), dr.InferenceFinishReason.Stop)
    assert whole == chunked == by_char


@pytest.mark.parametrize("output", OUTPUTS)
def test_chat_deltas_concatenate_to_the_whole(output: str) -> None:
    texts, accumulated = run(PROTOCOLS[0], list(output), dr.InferenceFinishReason.Stop)
    message = json.loads(accumulated)["choices"][0]["message"]
    content, reasoning = "", ""
    args: dict[int, str] = {}
    for t in texts:
        delta = json.loads(t)["choices"][0]["delta"]
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        for call in delta.get("tool_calls") or []:
            args[call["index"]] = args.get(call["index"], "") + call["function"]["arguments"]
    assert content == message["content"] and reasoning == message["reasoning_content"]
    assert [args[i] for i in sorted(args)] == [c["function"]["arguments"] for c in message.get("tool_calls", [])]
    for text in (content, reasoning, *args.values()):
        assert D not in text and "</think>" not in text


def test_tool_arguments_are_valid_json_when_the_model_is() -> None:
    _, accumulated = run(PROTOCOLS[0], list("x</think>" + CALL), dr.InferenceFinishReason.Stop)
    choice = json.loads(accumulated)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    args = json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"])
    assert args == {"city": 'Pa"ri\\s <b> </DSML> </parameter x 中文 😀', "days": 3}


def is_terminal(which: int, last: dict[str, Any]) -> bool:
    if which == 0:
        return bool(last["choices"][0]["finish_reason"] is not None)
    if which == 1:
        return bool(last["type"] in ("response.completed", "response.incomplete"))
    return bool(last["type"] == "message_stop")


@pytest.mark.parametrize("which", range(3))
@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("finish", [None, dr.InferenceFinishReason.Stop, dr.InferenceFinishReason.Length])
def test_misbehaving_model_still_ends_cleanly(which: int, output: str, finish: Any) -> None:
    texts, _ = run(PROTOCOLS[which], [output[i : i + 3] for i in range(0, len(output), 3)], finish)
    assert is_terminal(which, json.loads(texts[-1]))


def test_lifecycle_errors() -> None:
    request_cls, _, body = PROTOCOLS[0]
    converted = request_cls(body).convert(dr.ConversionOptions())
    generator = request_cls.chunk_generator(converted, "id", "m")
    processor = dr.StreamProcessor(generator, converted.parsing_options)
    with pytest.raises(RuntimeError, match="chunk generator has been consumed"):
        dr.StreamProcessor(generator, converted.parsing_options)
    with pytest.raises(RuntimeError, match="token chunk received without a tokenizer"):
        processor.push(dr.InferenceChunk.tokens([1, 2]))
    with pytest.raises(RuntimeError, match="stream processor is closed"):
        processor.push(dr.InferenceChunk.text("x", 1))
