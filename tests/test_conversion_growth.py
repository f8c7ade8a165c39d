"""Every count a request controls costs linear conversion time, accepted or rejected.

Each case builds a request with ``n`` of one thing (messages, calls, results, tools, names,
schema nodes, parts) for each protocol, and the check is that ``4 * n`` costs at most about
``4x`` (see ``tests.growth``). Each case also pins what the request converts to, so a case
that silently stopped reaching its path (an early error) fails instead of timing nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.growth import assert_linear_growth

V4 = "DeepSeek-V4-Pro"
V41 = "DeepSeek-V4.1-Flash"
Body = dict[str, Any]
Converter = Callable[[str], Any]

CHAT: Converter = dr.ChatCompletionRequest
RESPONSES: Converter = dr.ResponsesRequest
MESSAGES: Converter = dr.MessagesRequest
USER = {"role": "user", "content": "x"}


def chat_tool(name: str, parameters: Body | None = None, strict: bool | None = None) -> Body:
    function: Body = {"name": name, "parameters": parameters or {"type": "object", "properties": {}}}
    if strict is not None:
        function["strict"] = strict
    return {"type": "function", "function": function}


def chat_call(call_id: str) -> Body:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def strict_object(properties: Body) -> Body:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def chat(**body: Any) -> Body:
    return {"model": V4, "messages": [USER], **body}


def chat_pairing(n: int, results: list[int]) -> Body:
    calls = {"role": "assistant", "content": None, "tool_calls": [chat_call(f"c{i}") for i in range(n)]}
    tool_messages = [{"role": "tool", "tool_call_id": f"c{i}", "content": "r"} for i in results]
    return {"model": V4, "messages": [USER, calls, *tool_messages]}


def responses_pairing(n: int, results: list[int]) -> Body:
    calls = [{"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"} for i in range(n)]
    outputs = [{"type": "function_call_output", "call_id": f"c{i}", "output": "r"} for i in results]
    return {"model": V4, "input": [USER, *calls, *outputs]}


def messages_pairing(n: int, results: list[int]) -> Body:
    uses = [{"type": "tool_use", "id": f"c{i}", "name": "f", "input": {}} for i in range(n)]
    answers = [{"type": "tool_result", "tool_use_id": f"c{i}", "content": "r"} for i in results]
    return {
        "model": V4,
        "max_tokens": 10,
        "messages": [USER, {"role": "assistant", "content": uses}, {"role": "user", "content": answers}],
    }


def namespace(name: str, members: list[str]) -> Body:
    return {
        "type": "namespace",
        "name": name,
        "description": "d",
        "tools": [{"type": "function", "name": m} for m in members],
    }


OK = "ok"
UNIQUE = "Tool names must be unique."
CHAT_MISSING = "following tool_call_ids did not have response messages"
CHAT_INSUFFICIENT = "insufficient tool messages following tool_calls message"
CHAT_DUPLICATE = "Duplicate value for 'tool_call_id'"

# name -> (converter, body for n, what it converts to: "ok" or a fragment of the error)
CASES: dict[str, tuple[Converter, Callable[[int], Body], str]] = {
    # Chat Completions
    "chat_messages": (
        CHAT,
        lambda n: {"model": V4, "messages": [{"role": "user", "content": f"m{i}"} for i in range(n)]},
        OK,
    ),
    "chat_content_parts": (
        CHAT,
        lambda n: {"model": V4, "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}] * n}]},
        OK,
    ),
    "chat_calls_and_results": (CHAT, lambda n: chat_pairing(n, list(range(n))), OK),
    "chat_results_reversed": (CHAT, lambda n: chat_pairing(n, list(reversed(range(n)))), OK),
    "chat_result_missing": (CHAT, lambda n: chat_pairing(n, list(range(n - 1))), CHAT_INSUFFICIENT),
    "chat_result_unknown_last": (CHAT, lambda n: chat_pairing(n, [*range(n - 1), n]), CHAT_MISSING),
    "chat_result_duplicate_last": (CHAT, lambda n: chat_pairing(n, [*range(n - 1), 0]), CHAT_DUPLICATE),
    "chat_call_turns": (
        CHAT,
        lambda n: {
            "model": V4,
            "messages": [USER]
            + [
                m
                for i in range(n)
                for m in (
                    {"role": "assistant", "content": None, "tool_calls": [chat_call(f"c{i}")]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": "r"},
                )
            ],
        },
        OK,
    ),
    "chat_tools": (CHAT, lambda n: chat(tools=[chat_tool(f"t{i}") for i in range(n)]), OK),
    "chat_tools_duplicate_last": (
        CHAT,
        lambda n: chat(tools=[chat_tool(f"t{i}") for i in range(n)] + [chat_tool("t0")]),
        UNIQUE,
    ),
    "chat_schema_properties": (
        CHAT,
        lambda n: chat(
            tools=[chat_tool("t", {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(n)}})]
        ),
        OK,
    ),
    "chat_strict_properties": (
        CHAT,
        lambda n: chat(tools=[chat_tool("t", strict_object({f"p{i}": {"type": "string"} for i in range(n)}), True)]),
        OK,
    ),
    "chat_strict_any_of": (
        CHAT,
        lambda n: chat(
            tools=[
                chat_tool(
                    "t", strict_object({"a": {"anyOf": [{"type": "string", "const": f"v{i}"} for i in range(n)]}}), True
                )
            ]
        ),
        OK,
    ),
    "chat_schema_defs_and_refs": (
        CHAT,
        lambda n: chat(
            tools=[
                chat_tool(
                    "t",
                    {
                        "type": "object",
                        "$defs": {f"d{i}": {"type": "string"} for i in range(n)},
                        "properties": {f"a{i}": {"$ref": f"#/$defs/d{i}"} for i in range(n)},
                    },
                )
            ]
        ),
        OK,
    ),
    "chat_strict_defs_and_refs": (
        CHAT,
        lambda n: chat(
            tools=[
                chat_tool(
                    "t",
                    {
                        **strict_object({f"a{i}": {"$ref": f"#/$defs/d{i}"} for i in range(n)}),
                        "$defs": {f"d{i}": {"type": "string"} for i in range(n)},
                    },
                    True,
                )
            ]
        ),
        OK,
    ),
    "chat_pattern_properties": (
        CHAT,
        lambda n: chat(
            tools=[chat_tool("t", {"type": "object", "patternProperties": {f"^p{i}[a-z]+": {} for i in range(n)}})]
        ),
        OK,
    ),
    "chat_response_format_properties": (
        CHAT,
        lambda n: {
            "model": V4,
            "messages": [{"role": "user", "content": "json"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "s",
                    "schema": {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}},
                },
            },
        },
        OK,
    ),
    "chat_image_parts_v41": (
        CHAT,
        lambda n: {
            "model": V41,
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": f"http://x/{i}"}} for i in range(n)],
                }
            ],
        },
        OK,
    ),
    "chat_data_url_length": (
        CHAT,
        lambda n: {
            "model": V41,
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + "AAAA" * n}}],
                }
            ],
        },
        OK,
    ),
    "chat_long_link_last": (
        CHAT,
        lambda n: {
            "model": V41,
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": f"http://x/{i}"}} for i in range(n)]
                    + [{"type": "image_url", "image_url": {"url": "http://" + "x" * 9000}}],
                }
            ],
        },
        "max link length 8192",
    ),
    # Responses
    "responses_image_parts_v41": (
        RESPONSES,
        lambda n: {
            "model": V41,
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": f"http://x/{i}"} for i in range(n)]}
            ],
        },
        OK,
    ),
    "responses_items": (
        RESPONSES,
        lambda n: {"model": V4, "input": [{"role": "user", "content": f"m{i}"} for i in range(n)]},
        OK,
    ),
    "responses_calls_and_outputs": (RESPONSES, lambda n: responses_pairing(n, list(range(n))), OK),
    "responses_outputs_reversed": (RESPONSES, lambda n: responses_pairing(n, list(reversed(range(n)))), OK),
    "responses_tools": (
        RESPONSES,
        lambda n: {"model": V4, "input": "x", "tools": [{"type": "function", "name": f"t{i}"} for i in range(n)]},
        OK,
    ),
    "responses_namespaces_colliding_v4": (
        RESPONSES,
        lambda n: {"model": V4, "input": "x", "tools": [namespace("ns", ["a"]) for _ in range(n)]},
        OK,
    ),
    "responses_namespaces_colliding_v41": (
        RESPONSES,
        lambda n: {"model": V41, "input": "x", "tools": [namespace("ns", ["a"]) for _ in range(n)]},
        OK,
    ),
    "responses_namespace_members": (
        RESPONSES,
        lambda n: {"model": V4, "input": "x", "tools": [namespace("ns", [f"a{i}" for i in range(n)])]},
        OK,
    ),
    # Messages
    "messages_messages": (
        MESSAGES,
        lambda n: {
            "model": V4,
            "max_tokens": 10,
            "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(2 * n + 1)],
        },
        OK,
    ),
    "messages_content_blocks": (
        MESSAGES,
        lambda n: {
            "model": V4,
            "max_tokens": 10,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}] * n}],
        },
        OK,
    ),
    "messages_image_blocks_v41": (
        MESSAGES,
        lambda n: {
            "model": V41,
            "max_tokens": 10,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
                    ]
                    * n,
                }
            ],
        },
        OK,
    ),
    "messages_base64_length": (
        MESSAGES,
        lambda n: {
            "model": V41,
            "max_tokens": 10,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "AA" * n + "="},
                        }
                    ],
                }
            ],
        },
        OK,
    ),
    "messages_uses_and_results": (MESSAGES, lambda n: messages_pairing(n, list(range(n))), OK),
    "messages_results_reversed": (MESSAGES, lambda n: messages_pairing(n, list(reversed(range(n)))), OK),
    "messages_tools": (
        MESSAGES,
        lambda n: {
            "model": V4,
            "max_tokens": 10,
            "messages": [USER],
            "tools": [{"name": f"t{i}", "input_schema": {"type": "object", "properties": {}}} for i in range(n)],
        },
        OK,
    ),
}


# A colliding namespace is a whole tool object (its echo, listing and constraint are built
# and freed too), and past a few hundred of them allocator and cache effects alone push 4x
# the namespaces to 6x the time. 125 stays clear of that, and a quadratic suffix search
# still shows at that size (the reference's costs 30x from 125 to 500 namespaces).
SIZES = {"responses_namespaces_colliding_v4": 125, "responses_namespaces_colliding_v41": 125}


def outcome(converter: Converter, text: str) -> str:
    try:
        converted = converter(text).convert(dr.ConversionOptions())
    except dr.ConversionError as error:
        return str(error)
    dr.DeepseekV4Encoding().render_conversation(converted.conversation)
    return OK


@pytest.mark.parametrize("name", CASES)
def test_conversion_is_linear_in_every_count(name: str) -> None:
    converter, build, expected = CASES[name]
    texts: dict[int, str] = {}

    def cost(n: int) -> float:
        text = texts.setdefault(n, json.dumps(build(n)))
        start = time.process_time()
        got = outcome(converter, text)
        elapsed = time.process_time() - start
        assert got == OK if expected == OK else expected in got, got
        return elapsed

    # 500 keeps both sizes inside the CPU caches; above that the allocator's own growth adds
    # up to 1.5x noise to every case (linear or not), while a quadratic path still costs 16x.
    assert_linear_growth(cost, SIZES.get(name, 500))
