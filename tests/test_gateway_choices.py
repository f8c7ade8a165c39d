"""Several choices (Chat's ``n``) and log probabilities end to end through the gateway, with
each engine API faked by a real loopback server (vLLM's ``/v1/completions``, SGLang's
``/generate``) and the demo engine; every stream and response checked against the official
SDKs' types."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.backends import Backend
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.backends.sglang import SGLangBackend
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.fake_engines import FakeEngine
from tests.gateway_support import ServerThread, check_response, check_stream, serving

MODEL = "DeepSeek-V4-Pro"
OUTPUT = "Let me think.</think>The answer is 42."
QUESTION = [{"role": "user", "content": "What is 6 x 7?"}]


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    # As the gateway's settings make it (max_choices 16).
    return Frontend(tokenizer, options=dr.ConversionOptions(max_choices=16))


@pytest.fixture(params=["completions", "sglang", "demo"])
def gateway(request: pytest.FixtureRequest, frontend: Frontend) -> Iterator[tuple[ServerThread, FakeEngine | None]]:
    kind = request.param
    if kind == "demo":
        with serving(gateway_for(frontend, DemoEngine(frontend.tokenizer))) as server:
            yield server, None
        return
    ids = frontend.tokenizer.encode(OUTPUT)
    engine = FakeEngine(frontend.tokenizer, kind=kind, script=[ids[k : k + 2] for k in range(0, len(ids), 2)])
    with serving(engine) as engine_http:
        backend: Backend = (
            CompletionsBackend(engine_http.url) if kind == "completions" else SGLangBackend(engine_http.url)
        )
        with serving(gateway_for(frontend, backend)) as server:
            yield server, engine


def gateway_for(frontend: Frontend, backend: Backend) -> Gateway:
    settings = GatewaySettings(log_requests=False, store="none")
    return Gateway(settings=settings, frontend=frontend, backend=backend)


def post(server: ServerThread, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=30)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_chat_with_several_choices(gateway: tuple[ServerThread, FakeEngine | None], stream: bool) -> None:
    server, engine = gateway
    body: dict[str, Any] = {"model": MODEL, "messages": QUESTION, "n": 3, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    response = post(server, "/v1/chat/completions", body)
    assert response.status_code == 200, response.text
    if engine is not None:
        sent = engine.requests[-1]
        assert (sent.get("n") or sent["sampling_params"]["n"]) == 3
    single = post(server, "/v1/chat/completions", {"model": MODEL, "messages": QUESTION})
    one = check_response("chat", single.content)
    if stream:
        events = check_stream("chat", response.content)
        texts = ["", "", ""]
        for event in events:
            for choice in event["choices"]:
                texts[choice["index"]] += choice["delta"].get("content") or ""
        assert texts == [one["choices"][0]["message"]["content"]] * 3
        last = events[-1]
        assert last["choices"] == [] and last["usage"]["completion_tokens"] == 3 * one["usage"]["completion_tokens"]
        assert all(e.get("usage") is None for e in events[:-1])
    else:
        whole = check_response("chat", response.content)
        assert [c["index"] for c in whole["choices"]] == [0, 1, 2]
        assert {c["message"]["content"] for c in whole["choices"]} == {one["choices"][0]["message"]["content"]}
        assert whole["usage"]["prompt_tokens"] == one["usage"]["prompt_tokens"]
        assert whole["usage"]["completion_tokens"] == 3 * one["usage"]["completion_tokens"]


def test_too_many_choices_are_refused(gateway: tuple[ServerThread, FakeEngine | None]) -> None:
    server, _ = gateway
    response = post(server, "/v1/chat/completions", {"model": MODEL, "messages": QUESTION, "n": 17})
    assert response.status_code == 400
    assert "n must be between 1 and 16" in response.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_logprobs_in_each_protocols_shape(gateway: tuple[ServerThread, FakeEngine | None], stream: bool) -> None:
    server, engine = gateway
    chat = post(
        server,
        "/v1/chat/completions",
        {"model": MODEL, "messages": QUESTION, "logprobs": True, "top_logprobs": 2, "stream": stream},
    )
    assert chat.status_code == 200, chat.text
    if engine is not None:
        sent = engine.requests[-1]
        assert sent.get("logprobs") == 2 or sent.get("top_logprobs_num") == 2
    if stream:
        entries = [
            entry
            for event in check_stream("chat", chat.content)
            for choice in event["choices"]
            for entry in ((choice.get("logprobs") or {}).get("content") or [])
        ]
    else:
        whole = check_response("chat", chat.content)
        entries = whole["choices"][0]["logprobs"]["content"]
    assert entries, "the answer's tokens carry log probabilities"
    assert all(len(entry["top_logprobs"]) == 2 and entry["logprob"] <= 0 for entry in entries)
    responses = post(
        server, "/v1/responses", {"model": MODEL, "input": "What is 6 x 7?", "top_logprobs": 2, "stream": stream}
    )
    assert responses.status_code == 200, responses.text
    if stream:
        deltas = [e for e in check_stream("responses", responses.content) if e["type"] == "response.output_text.delta"]
        found = [lp for delta in deltas for lp in delta["logprobs"]]
    else:
        output = check_response("responses", responses.content)["output"]
        found = [
            lp for item in output if item["type"] == "message" for part in item["content"] for lp in part["logprobs"]
        ]
    assert found and all(len(lp["top_logprobs"]) == 2 for lp in found)
    # Anthropic Messages has no log probabilities: the reply is the usual one.
    messages = post(server, "/v1/messages", {"model": MODEL, "max_tokens": 256, "messages": QUESTION, "stream": stream})
    assert messages.status_code == 200
    if stream:
        check_stream("messages", messages.content)
    else:
        check_response("messages", messages.content)
