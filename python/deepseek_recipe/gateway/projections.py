"""JSON projections of the library's native objects, as the page shows them: a converted
request's settings, its canonical conversation (messages, tools, images). Reads attributes
only; no rule of its own."""

from __future__ import annotations

from typing import Any

from deepseek_recipe._native import ImageSource, Message, ModelVersion, OutputConstraint, SystemMessage, ToolDefinition
from deepseek_recipe.frontend import PreparedRequest

VERSION_NAMES = {ModelVersion.DeepseekV4Pro: "V4", ModelVersion.DeepseekV41Flash: "V4.1"}
"""Each model version as the page names it."""


def request_json(converted: Any, prepared: PreparedRequest | None) -> dict[str, Any]:
    options, parsing = converted.inference_options, converted.parsing_options
    stage = parsing.thinking_initial_stage
    return {
        "model_version": VERSION_NAMES[converted.model_version],
        "stream": converted.stream,
        "inference": {
            "max_tokens": options.max_tokens,
            "resolved_max_tokens": prepared.sampling.max_tokens if prepared is not None else None,
            "temperature": options.temperature,
            "top_p": options.top_p,
            "seed": options.seed,
            "logprobs": options.logprobs,
            "top_logprobs": options.top_logprobs,
            "output_constraint": _constraint_json(options.output_constraint),
        },
        "parsing": {
            "parse_tool_calls": parsing.parse_tool_calls,
            "starts_in_tool_calls": parsing.starts_in_tool_calls,
            "parse_json_output": parsing.parse_json_output,
            "thinking_initial_stage": None if stage is None else str(stage).rsplit(".", 1)[-1],
            "stop_sequences": parsing.stop_sequences,
        },
    }


def _constraint_json(constraint: OutputConstraint | None) -> dict[str, Any] | None:
    if constraint is None:
        return None
    return {"kind": constraint.kind, "schema": constraint.schema}


def conversation_json(conversation: Any) -> dict[str, Any]:
    return {
        "thinking_mode": conversation.thinking_mode,
        "reasoning_effort": conversation.reasoning_effort,
        "tool_choice": conversation.tool_choice,
        "response_format": conversation.response_format,
        "response_schema": conversation.response_schema,
        "response_regex": conversation.response_regex,
        "tools": [_tool_json(tool) for tool in conversation.tools],
        "messages": [_message_json(message) for message in conversation.messages],
    }


def _tool_json(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if tool.strict is not None:
        out["strict"] = tool.strict
    if tool.defer_loading:
        out["defer_loading"] = True
    return out


def _message_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.reasoning_content is not None:
        out["reasoning_content"] = message.reasoning_content
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.prefix:
        out["prefix"] = True
    if message.image_sources:
        out["images"] = [_image_json(source) for source in message.image_sources]
    if isinstance(message, SystemMessage) and message.tools:
        out["tools"] = [_tool_json(tool) for tool in message.tools]
    return out


def _image_json(source: ImageSource) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": source.kind, "detail": source.detail, "path": source.path}
    if source.url is not None:
        out["url"] = _shorten(source.url)
    if source.data_url is not None:
        out["data_url"] = _shorten(source.data_url)
    if source.data is not None:
        out["bytes"] = len(source.data)
    return out


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
