"""vLLM's chat form of a request, as a Chat Completions body this library converts.

Every vLLM endpoint (Chat Completions, Responses, Anthropic Messages) turns its request into one
list of chat messages plus template settings before a renderer sees it. This module maps that
form back to the Chat Completions body the official encoder's rules are written for; it holds
no rule of DeepSeek's own (conversion, rendering and encoding stay in the Rust core) and does
not import vLLM, so it is tested without it.

What vLLM changes on the way, and how it is undone here:

- an assistant message's ``reasoning_content`` arrives as ``reasoning`` (vLLM's name for it,
  also what it makes of Responses reasoning items and Anthropic thinking blocks);
- tool definitions arrive dumped from vLLM's models, with ``None`` for every optional field the
  client left out (a ``None`` field is dropped: the client did not send it);
- thinking arrives as template arguments (``thinking`` / ``enable_thinking``, and
  ``reasoning_effort``, which vLLM also turns into ``enable_thinking``);
- ``continue_final_message`` asks to continue the last assistant message, which is this
  format's ``prefix`` flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deepseek_recipe._native import ChatCompletionRequest, ConversionError, ConversionOptions

_TOOL_FIELDS_DROPPED_WHEN_NONE = ("description", "parameters", "strict")


def chat_body(
    messages: Sequence[Mapping[str, Any]],
    *,
    model: str,
    template_kwargs: Mapping[str, Any],
    tool_choice: Any = None,
    response_format: Any = None,
) -> dict[str, Any]:
    """The Chat Completions body for vLLM's rendered-request arguments.

    ``template_kwargs`` are vLLM's chat template arguments (``tools`` among them);
    ``tool_choice`` and ``response_format`` are the request's own, as dicts or as vLLM's pydantic
    models.
    """
    body: dict[str, Any] = {"model": model, "messages": [_message(m) for m in messages]}
    if template_kwargs.get("continue_final_message") and body["messages"]:
        last = body["messages"][-1]
        if last.get("role") == "assistant":
            last["prefix"] = True
    tools = template_kwargs.get("tools")
    if tools:
        body["tools"] = [_tool(tool) for tool in tools]
        if tool_choice is not None:
            body["tool_choice"] = _plain(tool_choice)
    if response_format is not None:
        body["response_format"] = _plain(response_format)
    thinking = _thinking(template_kwargs)
    if thinking is not None:
        body["thinking"] = {"type": "enabled" if thinking else "disabled"}
    effort = template_kwargs.get("reasoning_effort")
    if isinstance(effort, str):
        body["reasoning_effort"] = effort
    return body


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(message)
    if out.get("role") == "assistant" and "reasoning" in out:
        reasoning = out.pop("reasoning")
        if reasoning is not None and "reasoning_content" not in out:
            out["reasoning_content"] = reasoning
    return out


def _tool(tool: Any) -> Any:
    tool = _plain(tool)
    if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict):
        return tool
    function = {
        key: value
        for key, value in tool["function"].items()
        if not (value is None and key in _TOOL_FIELDS_DROPPED_WHEN_NONE)
    }
    return {**{key: value for key, value in tool.items() if value is not None}, "function": function}


def _thinking(template_kwargs: Mapping[str, Any]) -> bool | None:
    """Thinking on or off as the template arguments say (``None``: they do not say)."""
    for key in ("thinking", "enable_thinking"):
        value = template_kwargs.get(key)
        if isinstance(value, bool):
            return value
    return None


def _plain(value: Any) -> Any:
    """A pydantic model as the JSON-shaped dict its fields spell (aliases, no unset fields)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, exclude_none=True)
    return value


def thinking_mode(template_kwargs: Mapping[str, Any], options: ConversionOptions) -> bool:
    """Whether a request with these template arguments renders in thinking mode (the prompt
    then ends inside the reasoning block), by the conversion rules themselves."""
    model = next(iter(options.model_versions_by_name))
    body = chat_body([{"role": "user", "content": "x"}], model=model, template_kwargs=template_kwargs)
    try:
        return ChatCompletionRequest(body).convert(options).conversation.thinking_mode
    except (ValueError, ConversionError):
        return options.default_thinking_mode
