"""The gateway does not trust its engine: output stops at ``max_tokens`` (and the engine's
request is aborted), usage stays consistent whatever the engine claims (reasoning tokens at most
the completion tokens, cached tokens at most the prompt), an id outside the vocabulary fails the
stream, and an engine's failure tells the client which replica failed, never where it lives."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.backends import Backend
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.backends.pool import BackendPool
from deepseek_recipe.backends.sglang import SGLangBackend
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.fake_engines import FakeEngine
from tests.gateway_support import check_response, check_stream, parse_sse, serving, settle

MODEL = "DeepSeek-V4-Pro"
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
REASONING = "Let me think about the capital of France, carefully and step by step, once more."
ANSWER = "Paris is the capital of France."


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


def body_for(protocol: str, stream: bool = False, **extra: Any) -> dict[str, Any]:
    if protocol == "responses":
        return {"model": MODEL, "input": "Capital of France?", "stream": stream, **extra}
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "stream": stream,
        **extra,
    }
    if protocol == "messages":
        body.setdefault("max_tokens", 512)
    return body


def usage_of(protocol: str, response: dict[str, Any]) -> tuple[int, int, int, int]:
    """(prompt, cached, completion, reasoning) tokens of a whole response."""
    usage = response["usage"]
    if protocol == "chat":
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        return usage["prompt_tokens"], cached, usage["completion_tokens"], reasoning
    if protocol == "responses":
        cached = usage["input_tokens_details"]["cached_tokens"]
        return usage["input_tokens"], cached, usage["output_tokens"], usage["output_tokens_details"]["reasoning_tokens"]
    prompt = usage["input_tokens"] + (usage.get("cache_read_input_tokens") or 0)
    return prompt, usage.get("cache_read_input_tokens") or 0, usage["output_tokens"], 0


def engine_script(tokenizer: dr.Tokenizer, per_chunk: int) -> list[list[int]]:
    """The model's output (reasoning, its end, the answer) in chunks of ``per_chunk`` ids."""
    ids = tokenizer.encode(REASONING) + tokenizer.encode("</think>") + tokenizer.encode(ANSWER)
    return [ids[i : i + per_chunk] for i in range(0, len(ids), per_chunk)]


Setup = Callable[[dr.Tokenizer], AbstractContextManager[Backend]]


@contextmanager
def completions(tokenizer: dr.Tokenizer, **engine: Any) -> Iterator[Backend]:
    fake = FakeEngine(tokenizer, script=engine_script(tokenizer, engine.pop("per_chunk", 1)), **engine)
    with serving(fake) as http:
        yield CompletionsBackend(http.url)


@contextmanager
def sglang(tokenizer: dr.Tokenizer, **engine: Any) -> Iterator[Backend]:
    fake = FakeEngine(tokenizer, kind="sglang", script=engine_script(tokenizer, engine.pop("per_chunk", 1)), **engine)
    with serving(fake) as http:
        yield SGLangBackend(http.url)


@contextmanager
def pool(tokenizer: dr.Tokenizer, **engine: Any) -> Iterator[Backend]:
    with completions(tokenizer, **engine) as a, completions(tokenizer, **engine) as b:
        yield BackendPool([a, b])


@contextmanager
def demo(tokenizer: dr.Tokenizer, **engine: Any) -> Iterator[Backend]:
    yield DemoEngine(tokenizer)


BACKENDS: dict[str, tuple[Setup, dict[str, Any]]] = {
    "demo": (demo, {}),
    "completions_ids": (completions, {"cached_tokens": 10**12}),
    # Text only, several tokens a chunk and no logprobs: the engine's text is counted a token
    # a chunk, while the reasoning text encodes to more.
    "completions_text": (completions, {"token_ids": False, "per_chunk": 4, "cached_tokens": 10**12}),
    "sglang": (sglang, {"cached_tokens": 10**12}),
    "pool": (pool, {"cached_tokens": 10**12}),
}


@pytest.mark.parametrize("name", sorted(BACKENDS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_usage_invariants_over_every_backend(
    frontend: Frontend, tokenizer: dr.Tokenizer, name: str, stream: bool
) -> None:
    setup, engine = BACKENDS[name]
    with setup(tokenizer, **engine) as backend:
        gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend, backend=backend)
        with serving(gateway) as server:
            for protocol in PATHS:
                response = httpx.post(server.url + PATHS[protocol], json=body_for(protocol, stream), timeout=60)
                assert response.status_code == 200, response.text
                if stream:
                    events = check_stream(protocol, response.content)
                    final = _final_usage_holder(protocol, events)
                else:
                    final = check_response(protocol, response.content)
                prompt, cached, completion, reasoning = usage_of(protocol, final)
                assert reasoning <= completion, (protocol, reasoning, completion)
                assert cached <= prompt, (protocol, cached, prompt)
                assert completion > 0
            metrics = httpx.get(server.url + "/metrics").text
    hits = _metric(metrics, "deepseek_recipe:prompt_cache_hit_tokens_total")
    assert hits <= _metric(metrics, "deepseek_recipe:prompt_tokens_total")


def _final_usage_holder(protocol: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The streamed event that carries the final usage, shaped like a whole response's usage."""
    if protocol == "chat":
        return next(e for e in reversed(events) if e.get("usage"))
    if protocol == "responses":
        completed: dict[str, Any] = events[-1]["response"]
        return completed
    start = next(e for e in events if e["type"] == "message_start")["message"]["usage"]
    delta = next(e for e in reversed(events) if e["type"] == "message_delta")
    usage = {**start, **{k: v for k, v in delta["usage"].items() if v is not None}}
    return {"usage": usage, "stop_reason": delta["delta"]["stop_reason"]}


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def finish_of(protocol: str, response: dict[str, Any]) -> Any:
    """Why a whole response (or a stream's final usage holder) says the output ended."""
    if protocol == "chat":
        return (response.get("choices") or [{}])[0].get("finish_reason")
    if protocol == "responses":
        return (response.get("incomplete_details") or {}).get("reason")
    return response.get("stop_reason")


@pytest.mark.parametrize("protocol", sorted(PATHS))
@pytest.mark.parametrize("kind", ["completions", "sglang"])
def test_output_stops_at_max_tokens_and_the_engine_is_aborted(
    frontend: Frontend, tokenizer: dr.Tokenizer, protocol: str, kind: str
) -> None:
    engine = FakeEngine(tokenizer, kind=kind, behaviour="endless", script=[tokenizer.encode(" word")], interval=0.001)  # type: ignore[arg-type]
    limit = {"responses": "max_output_tokens"}.get(protocol, "max_tokens")
    with serving(engine) as http:
        backend = CompletionsBackend(http.url) if kind == "completions" else SGLangBackend(http.url)
        gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend, backend=backend)
        with serving(gateway) as server:
            for stream in (False, True):
                body = {**body_for(protocol, stream, thinking={"type": "disabled"}), limit: 50}
                if protocol != "messages":
                    body.pop("thinking")
                response = httpx.post(server.url + PATHS[protocol], json=body, timeout=60)
                assert response.status_code == 200, response.text
                if stream:
                    final = _final_usage_holder(protocol, check_stream(protocol, response.content))
                else:
                    final = check_response(protocol, response.content)
                assert usage_of(protocol, final)[2] == 50
                if not stream or protocol != "chat":
                    assert finish_of(protocol, final) in ("length", "max_output_tokens", "max_tokens")
            assert settle(lambda: engine.active == 0 and gateway.in_flight == 0)
            assert engine.disconnects == 2  # both requests aborted at the engine


@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_an_id_outside_the_vocabulary_fails_the_stream(
    frontend: Frontend, tokenizer: dr.Tokenizer, protocol: str
) -> None:
    script = [tokenizer.encode("Hello"), [10_000_000], tokenizer.encode(" world")]
    engine = FakeEngine(tokenizer, script=script)
    with serving(engine) as http:
        gateway = Gateway(
            settings=GatewaySettings(log_requests=False), frontend=frontend, backend=CompletionsBackend(http.url)
        )
        with serving(gateway) as server:
            whole = httpx.post(server.url + PATHS[protocol], json=body_for(protocol), timeout=60)
            assert whole.status_code == 502, whole.text
            assert "token id outside the vocabulary" in whole.text
            streamed = httpx.post(server.url + PATHS[protocol], json=body_for(protocol, stream=True), timeout=60)
            assert streamed.status_code == 200
            name, data = parse_sse(streamed.content)[-1]
            assert "token id outside the vocabulary" in data and (protocol == "chat" or name == "error")


def test_engine_failures_name_the_replica_not_its_address(
    frontend: Frontend, tokenizer: dr.Tokenizer, caplog: pytest.LogCaptureFixture
) -> None:
    failing = FakeEngine(tokenizer, behaviour="status")
    with serving(failing) as http:
        for backend, replica in [(CompletionsBackend(http.url), 0), (BackendPool([CompletionsBackend(http.url)]), 0)]:
            gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend, backend=backend)
            with serving(gateway) as server, caplog.at_level(logging.WARNING, logger="deepseek_recipe.gateway"):
                for protocol in PATHS:
                    response = httpx.post(server.url + PATHS[protocol], json=body_for(protocol), timeout=60)
                    assert response.status_code == 502
                    assert f"(replica {replica}): the engine answered HTTP 500" in response.text
                    assert "127.0.0.1" not in response.text and str(http.port) not in response.text
            assert any(http.url in record.getMessage() for record in caplog.records), "the log keeps the URL"
