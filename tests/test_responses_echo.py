"""A Responses reply reports its request's settings (instructions, sampling, reasoning, text,
tool choice and the declared tools in their reported shapes). The converted request carries
them to the chunk generator, so `Frontend`'s decoders (the gateway's) report them with nothing
set in Python: a whole request, one continued from stored items, streamed or not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

import deepseek_recipe as dr
from deepseek_recipe._native import ResponsesHistory
from deepseek_recipe.frontend import Frontend, PreparedRequest

EVENT = TypeAdapter(ResponseStreamEvent)
RESPONSE = TypeAdapter(Response)

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string", "description": "A city."}}}
BODY: dict[str, Any] = {
    "model": "DeepSeek-V4-Pro",
    "input": "What is the weather in Paris?",
    "instructions": "Answer in one word.",
    "temperature": 0.3,
    "top_p": 0.9,
    "max_output_tokens": 300,
    "user": "user-7",
    "reasoning": {"effort": "none"},
    "tool_choice": {"type": "function", "name": "weather"},
    "tools": [
        {"type": "function", "name": "weather", "description": "Today's weather.", "parameters": PARAMETERS, "x": 1},
        {
            "type": "namespace",
            "name": "files",
            "description": "Files.",
            "tools": [{"type": "function", "name": "read", "parameters": {"type": "object", "properties": {}}}],
        },
    ],
}
# What a response object reports for BODY (the reference's shapes: a function tool keeps five
# keys, a namespace its members, the choice object its type and name).
REPORTED = {
    "instructions": "Answer in one word.",
    "temperature": 0.3,
    "top_p": 0.9,
    "max_output_tokens": 300,
    "user": "user-7",
    "reasoning": {"effort": "none", "summary": None},
    "tool_choice": {"type": "function", "name": "weather"},
    "text": {"format": {"type": "text"}, "verbosity": None},
    "tools": [
        {
            "type": "function",
            "name": "weather",
            "description": "Today's weather.",
            "parameters": PARAMETERS,
            "strict": None,
        },
        {
            "type": "namespace",
            "name": "files",
            "description": "Files.",
            "tools": [
                {
                    "type": "function",
                    "name": "read",
                    "description": None,
                    "parameters": {"type": "object", "properties": {}},
                    "strict": None,
                }
            ],
        },
    ],
}


def _reported(response: dict[str, Any]) -> dict[str, Any]:
    return {key: response[key] for key in REPORTED}


def _responses(prepared: PreparedRequest, tokenizer: dr.Tokenizer, stream: bool) -> list[dict[str, Any]]:
    """Every response object a decoder reports for `prepared` (each event's, or the whole one)."""
    decoder = prepared.decoder()
    events = decoder.start(prompt_tokens=len(prepared.prompt_ids), cached_tokens=0)
    events += decoder.push_tokens(tokenizer.encode("Sunny."))
    events += decoder.finish("stop")
    if not stream:
        decoder.accumulate(events)
        RESPONSE.validate_json(decoder.response())
        return [json.loads(decoder.response())]
    frames = [f for f in decoder.sse(events).decode().split("\n\n") if f]
    values = [json.loads(f.split("\ndata: ", 1)[1]) for f in frames]
    for value in values:
        EVENT.validate_python(value)
    return [value["response"] for value in values if "response" in value]


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_reports_its_settings(tokenizer: dr.Tokenizer, stream: bool) -> None:
    prepared = Frontend(tokenizer).prepare("responses", {**BODY, "stream": stream})
    responses = _responses(prepared, tokenizer, stream)
    assert responses
    for response in responses:
        assert _reported(response) == REPORTED


@pytest.mark.parametrize("stream", [False, True])
def test_a_continued_request_reports_its_own_settings(tokenizer: dr.Tokenizer, stream: bool) -> None:
    frontend = Frontend(tokenizer)
    earlier = [
        {"role": "user", "content": "Hello."},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]},
    ]
    history = ResponsesHistory.from_json(json.dumps(earlier).encode())
    # The stored turn had other settings; a continued request reports only its own.
    request = dr.ResponsesRequest(json.dumps({**BODY, "stream": stream}))
    encoded, _, _ = frontend.encode_continuing(request, history)
    responses = _responses(frontend.assemble(encoded, None), tokenizer, stream)
    assert responses
    for response in responses:
        assert _reported(response) == REPORTED
