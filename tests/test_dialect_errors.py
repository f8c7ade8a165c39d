"""Bad input per dialect: each gets the documented error (type and exact message), never a crash.

Expected messages are those of the public deepseek-recipe 0.2.0 for the same bodies.
"""

from __future__ import annotations

from typing import Any

import pytest

import deepseek_recipe as dr

M4 = "DeepSeek-V4-Pro"
CLASSES: dict[str, Any] = {
    "chat": dr.ChatCompletionRequest,
    "responses": dr.ResponsesRequest,
    "messages": dr.MessagesRequest,
}

CASES: list[tuple[str, dict[str, Any], str, Any]] = [
    (
        "chat",
        {
            "model": "DeepSeek-V4-Pro",
            "messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "zz", "content": "r"}],
        },
        "ConversionError",
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
    ),
    (
        "chat",
        {
            "model": "DeepSeek-V4-Pro",
            "messages": [
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                },
            ],
        },
        "ConversionError",
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)",
    ),
    (
        "chat",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": [{"type": "audio", "x": 1}]}]},
        "ValueError",
        "invalid request body: unknown variant `audio`, expected one of `text`, `image_url`, `file`",
    ),
    (
        "chat",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x"}], "max_tokens": 10**9},
        "ConversionError",
        "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]",
    ),
    (
        "chat",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x"}], "temperature": 3},
        "ConversionError",
        "Invalid temperature value, the valid range of temperature is [0, 2]",
    ),
    (
        "chat",
        {
            "model": "DeepSeek-V4-Pro",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "f" * 300}}],
        },
        "ConversionError",
        "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 128, but got a string with length 300 instead.",
    ),
    (
        "chat",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x"}], "stop": ["a"] * 17},
        "ConversionError",
        "Stop string array too long: 17",
    ),
    (
        "responses",
        {"model": "DeepSeek-V4-Pro", "input": [{"type": "function_call_output", "call_id": "zz", "output": "r"}]},
        "ConversionError",
        "No tool call found for tool output with call_id zz.",
    ),
    (
        "responses",
        {
            "model": "DeepSeek-V4-Pro",
            "input": [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}],
        },
        "ConversionError",
        "No tool output found for tool call c1.",
    ),
    (
        "responses",
        {"model": "DeepSeek-V4-Pro", "input": {"role": "user"}},
        "ValueError",
        "invalid request body: input should be a string or a list of input items",
    ),
    (
        "responses",
        {"model": "DeepSeek-V4-Pro", "input": [{"role": "user", "content": [{"type": "refusal", "refusal": "no"}]}]},
        "ValueError",
        "invalid request body: unknown variant `refusal`, expected one of `input_text`, `output_text`, `input_image`, `input_file`",
    ),
    ("responses", {"model": "DeepSeek-V4-Pro", "input": []}, "ConversionError", "Input items array must not be empty"),
    (
        "responses",
        {"model": "DeepSeek-V4-Pro", "input": "x", "max_output_tokens": 10**9},
        "ConversionError",
        "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]",
    ),
    (
        "responses",
        {"model": "DeepSeek-V4-Pro", "input": "x", "tools": [{"type": "custom", "name": "other"}]},
        "ConversionError",
        "Unsupported custom tool: 'other'. Only 'apply_patch' is supported.",
    ),
    (
        "messages",
        {
            "model": "DeepSeek-V4-Pro",
            "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]}],
        },
        "ConversionError",
        "unexpected `messages.0.content.0: tool_use_id` found in `tool_result` blocks: t1. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ),
    (
        "messages",
        {
            "model": "DeepSeek-V4-Pro",
            "messages": [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                {"role": "user", "content": "y"},
            ],
        },
        "ConversionError",
        "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: t1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ),
    (
        "messages",
        {
            "model": "DeepSeek-V4-Pro",
            "messages": [{"role": "user", "content": [{"type": "redacted_thinking", "data": "x"}]}],
        },
        "ValueError",
        "invalid request body: unknown variant `redacted_thinking`, expected one of `text`, `image`, `document`, `thinking`, `server_tool_use`, `tool_use`, `tool_result`, `web_search_tool_result`, `tool_addition`",
    ),
    (
        "messages",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": [{"type": "bogus"}]}]},
        "ValueError",
        "invalid request body: unknown variant `bogus`, expected one of `text`, `image`, `document`, `thinking`, `server_tool_use`, `tool_use`, `tool_result`, `web_search_tool_result`, `tool_addition`",
    ),
    (
        "messages",
        {"model": "DeepSeek-V4-Pro", "messages": []},
        "ConversionError",
        "messages: at least one message is required",
    ),
    (
        "messages",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": []}]},
        "ConversionError",
        "messages.0: all messages must have non-empty content",
    ),
    (
        "messages",
        {
            "model": "DeepSeek-V4-Pro",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "bash_20250124", "name": "bash"}],
        },
        "ConversionError",
        "tools[0]: server tools are not supported",
    ),
    (
        "messages",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x"}], "max_tokens": 10**9},
        "ok",
        393216,
    ),
    (
        "messages",
        {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0},
        "ConversionError",
        "Invalid max_tokens value, the valid range of max_tokens is [1, 393216]",
    ),
]


@pytest.mark.parametrize(
    ("protocol", "body", "outcome", "detail"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_dialect_errors(protocol: str, body: dict[str, Any], outcome: str, detail: Any) -> None:
    try:
        converted = CLASSES[protocol](body).convert(dr.ConversionOptions())
    except Exception as e:  # a PanicException (BaseException) would escape and fail the test
        assert (type(e).__name__, str(e)) == (outcome, detail)
        if isinstance(e, dr.ConversionError):
            assert e.status_code == 400
        return
    assert (outcome, converted.inference_options.max_tokens) == ("ok", detail)
