"""The gateway on loopback, driven by the official ``openai`` and ``anthropic`` SDKs.

Every stream and response is also fetched raw and checked against the SDKs' own types, and
the prompt ids the engine received are checked against the library's own encoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

import deepseek_recipe as dr
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.gateway_support import RecordingDemo, ServerThread, check_response, check_stream, serving

MODEL = "DeepSeek-V4-Pro"
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}


@pytest.fixture(scope="session")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


@pytest.fixture(scope="module")
def engine(frontend: Frontend) -> RecordingDemo:
    return RecordingDemo(frontend.tokenizer)


@pytest.fixture(scope="module")
def server(frontend: Frontend, engine: RecordingDemo) -> Iterator[ServerThread]:
    gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend, backend=engine)
    with serving(gateway) as running:
        yield running


@pytest.fixture
def oai(server: ServerThread) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture
def claude(server: ServerThread) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0)


def raw(server: ServerThread, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=30)


BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "Hello <｜User｜>"}]}),
    "responses": ("/v1/responses", {"model": MODEL, "input": "Hello <｜User｜>"}),
    "messages": (
        "/v1/messages",
        {"model": MODEL, "max_tokens": 512, "messages": [{"role": "user", "content": "Hello <｜User｜>"}]},
    ),
}
TOOLS: dict[str, list[dict[str, Any]]] = {
    "chat": [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": WEATHER}}
    ],
    "responses": [{"type": "function", "name": "get_weather", "description": "Weather", "parameters": WEATHER}],
    "messages": [{"name": "get_weather", "description": "Weather", "input_schema": WEATHER}],
}


@pytest.mark.parametrize("protocol", sorted(BODIES))
@pytest.mark.parametrize("tools", [False, True], ids=["answer", "tool_call"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_every_event_and_response_has_the_sdk_type(
    server: ServerThread, engine: RecordingDemo, frontend: Frontend, protocol: str, tools: bool, stream: bool
) -> None:
    path, body = BODIES[protocol]
    body = {**body, "stream": stream}
    if protocol == "chat" and stream:
        body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = TOOLS[protocol]
    response = raw(server, path, body)
    assert response.status_code == 200, response.text
    # The engine got exactly the library's ids for this request.
    assert engine.prompts[-1] == frontend.prepare(protocol, json.dumps(body)).prompt_ids  # type: ignore[arg-type]
    if stream:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = check_stream(protocol, response.content)
        assert events
    else:
        check_response(protocol, response.content)


def test_chat_sdk_whole_and_streamed(oai: openai.OpenAI) -> None:
    messages: Any = [{"role": "user", "content": "Hi there"}]
    whole = oai.chat.completions.create(model=MODEL, messages=messages)
    assert whole.choices[0].finish_reason == "stop"
    text = whole.choices[0].message.content
    assert text and "Hi there" in text
    assert whole.usage is not None and whole.usage.prompt_tokens > 0
    assert whole.usage.completion_tokens_details is not None
    assert (whole.usage.completion_tokens_details.reasoning_tokens or 0) > 0
    chunks = list(
        oai.chat.completions.create(model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True})
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == text
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens == whole.usage.completion_tokens


def test_responses_sdk_whole_and_streamed(oai: openai.OpenAI) -> None:
    whole = oai.responses.create(model=MODEL, input="Hi there")
    assert whole.status == "completed" and "Hi there" in whole.output_text
    assert whole.usage is not None and whole.usage.output_tokens_details.reasoning_tokens > 0
    with oai.responses.stream(model=MODEL, input="Hi there") as stream:
        final = stream.get_final_response()
    assert final.output_text == whole.output_text


def test_messages_sdk_whole_and_streamed(claude: anthropic.Anthropic) -> None:
    whole = claude.messages.create(model=MODEL, max_tokens=512, messages=[{"role": "user", "content": "Hi there"}])
    assert whole.stop_reason == "end_turn"
    assert [block.type for block in whole.content] == ["thinking", "text"]
    with claude.messages.stream(model=MODEL, max_tokens=512, messages=[{"role": "user", "content": "Hi there"}]) as s:
        final = s.get_final_message()
    assert final.content[1].type == "text" and whole.content[1].type == "text"
    assert final.content[1].text == whole.content[1].text


def test_chat_tool_loop_keeps_reasoning(oai: openai.OpenAI, engine: RecordingDemo, frontend: Frontend) -> None:
    tools: Any = TOOLS["chat"]
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = oai.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert len(calls) == 1 and calls[0].type == "function"
    call = calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Weather in Paris?", "days": 3}
    reasoning = first.choices[0].message.model_extra["reasoning_content"]  # type: ignore[index]
    assert reasoning
    messages.append(
        {
            "role": "assistant",
            "content": choice.message.content or "",
            "reasoning_content": reasoning,
            "tool_calls": [call.model_dump()],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"})
    second = oai.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "The tool returned: sunny, 21 C"
    assert reasoning in frontend.tokenizer.decode(engine.prompts[-1])


def test_responses_tool_loop_keeps_reasoning(oai: openai.OpenAI, engine: RecordingDemo, frontend: Frontend) -> None:
    tools: Any = TOOLS["responses"]
    first = oai.responses.create(model=MODEL, input="Weather in Paris?", tools=tools)
    kinds = [item.type for item in first.output]
    assert kinds == ["reasoning", "function_call"]
    call = first.output[1]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Weather in Paris?", "days": 3}
    reasoning = first.output[0]
    assert reasoning.type == "reasoning"
    thought = "".join(part.text for part in reasoning.content or [])
    assert thought
    history: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    history += [item.model_dump(exclude_none=True) for item in first.output]
    history.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"})
    second = oai.responses.create(model=MODEL, input=history, tools=tools)
    assert second.output_text == "The tool returned: sunny, 21 C"
    assert thought in frontend.tokenizer.decode(engine.prompts[-1])


def test_messages_tool_loop_keeps_reasoning(
    claude: anthropic.Anthropic, engine: RecordingDemo, frontend: Frontend
) -> None:
    tools: Any = TOOLS["messages"]
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = claude.messages.create(model=MODEL, max_tokens=512, messages=messages, tools=tools)
    assert first.stop_reason == "tool_use"
    assert [block.type for block in first.content] == ["thinking", "tool_use"]
    thinking, use = first.content
    assert thinking.type == "thinking" and use.type == "tool_use"
    assert use.name == "get_weather" and use.input == {"city": "Weather in Paris?", "days": 3}
    messages.append({"role": "assistant", "content": [block.model_dump() for block in first.content]})
    messages.append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 21 C"}]}
    )
    second = claude.messages.create(model=MODEL, max_tokens=512, messages=messages, tools=tools)
    assert second.stop_reason == "end_turn"
    text = second.content[-1]
    assert text.type == "text" and text.text == "The tool returned: sunny, 21 C"
    assert thinking.thinking in frontend.tokenizer.decode(engine.prompts[-1])


def test_count_tokens_is_what_the_engine_gets(claude: anthropic.Anthropic, engine: RecordingDemo) -> None:
    messages: Any = [{"role": "user", "content": "Count me, <｜User｜> included"}]
    counted = claude.messages.count_tokens(model=MODEL, messages=messages, tools=TOOLS["messages"])  # type: ignore[arg-type]
    claude.messages.create(model=MODEL, max_tokens=64, messages=messages, tools=TOOLS["messages"])  # type: ignore[arg-type]
    assert counted.input_tokens == len(engine.prompts[-1])


def test_models_in_both_shapes(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    assert [m.id for m in oai.models.list()] == [MODEL]
    assert [m.id for m in claude.models.list()] == [MODEL]


def test_health_and_metrics(server: ServerThread, oai: openai.OpenAI) -> None:
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}
    oai.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    metrics = httpx.get(server.url + "/metrics").text
    for name in (
        "deepseek_recipe:requests_total",
        "deepseek_recipe:time_to_first_token_seconds",
        "deepseek_recipe:inter_token_latency_seconds",
        "deepseek_recipe:prompt_tokens_total",
        "deepseek_recipe:generation_tokens_total",
        "deepseek_recipe:prompt_cache_hit_tokens_total",
        "deepseek_recipe:num_requests_running",
    ):
        assert name in metrics
    assert 'deepseek_recipe:requests_total{protocol="chat",status="200"}' in metrics


def test_prompt_cache_hits_are_reported(oai: openai.OpenAI) -> None:
    """The demo engine caches prompt blocks; a repeated long prompt reports cached tokens."""
    messages: Any = [{"role": "user", "content": "Long prompt. " * 300}]
    oai.chat.completions.create(model=MODEL, messages=messages)
    again = oai.chat.completions.create(model=MODEL, messages=messages)
    assert again.usage is not None and again.usage.prompt_tokens_details is not None
    cached = again.usage.prompt_tokens_details.cached_tokens or 0
    assert 0 < cached <= again.usage.prompt_tokens and cached % 128 == 0
