"""The HTTP backends against small real engines on loopback (``tests/fake_engines.py``): what
they send, how they read the engine's stream, and that a client going away closes the
engine's connection."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.backends import Backend, json_body
from deepseek_recipe.backends._http import without_stop_ids
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.backends.pool import BackendPool
from deepseek_recipe.backends.sglang import SGLangBackend
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.fake_engines import FakeEngine
from tests.gateway_support import ServerThread, check_response, check_stream, leave_a_stream, serving, settle

MODEL = "DeepSeek-V4-Pro"
OUTPUT = "Let me think.</think>The answer is 42 🦀."


@pytest.fixture(scope="session")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


def script(tokenizer: dr.Tokenizer, text: str = OUTPUT, per_chunk: int = 1) -> list[list[int]]:
    """``text`` as the model would emit it (template tokens as their ids), a few ids a chunk."""
    ids = tokenizer.encode(text)
    return [ids[k : k + per_chunk] for k in range(0, len(ids), per_chunk)]


@pytest.fixture
def engine_server(tokenizer: dr.Tokenizer) -> Iterator[tuple[FakeEngine, ServerThread]]:
    engine = FakeEngine(tokenizer, script=script(tokenizer))
    with serving(engine) as server:
        yield engine, server


def gateway_for(frontend: Frontend, backend: Backend, **settings: Any) -> Gateway:
    return Gateway(settings=GatewaySettings(log_requests=False, **settings), frontend=frontend, backend=backend)


def chat(url: str, stream: bool = False, **extra: Any) -> httpx.Response:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "What is 6 x 7?"}], "stream": stream, **extra}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=30)


# Sampling settings a request sets, for the engine's request. Thinking off: with thinking on, the
# library fixes temperature and top_p at 1.0.
SAMPLING: dict[str, Any] = {
    "temperature": 0.25,
    "top_p": 0.5,
    "seed": 7,
    "max_tokens": 77,
    "thinking": {"type": "disabled"},
}


@pytest.mark.parametrize("token_ids", [True, False], ids=["token_ids", "text"])
def test_completions_backend_sends_exact_ids_and_settings(
    frontend: Frontend, engine_server: tuple[FakeEngine, ServerThread], token_ids: bool
) -> None:
    engine, engine_http = engine_server
    engine.token_ids = token_ids
    engine.script = script(frontend.tokenizer, "The answer is 42 🦀.")
    backend = CompletionsBackend(engine_http.url, token_ids=True)
    settings = SAMPLING
    with serving(gateway_for(frontend, backend)) as server:
        response = chat(server.url, **settings)
    assert response.status_code == 200, response.text
    sent = engine.requests[-1]
    body = {"model": MODEL, "messages": [{"role": "user", "content": "What is 6 x 7?"}], "stream": False, **settings}
    assert sent["prompt"] == frontend.prepare("chat", json.dumps(body)).prompt_ids
    assert sent["max_tokens"] == 77 and sent["seed"] == 7
    assert sent["temperature"] == pytest.approx(0.25) and sent["top_p"] == pytest.approx(0.5)
    assert sent["stream"] is True and sent["return_token_ids"] is True
    assert sent["skip_special_tokens"] is False and sent["stop_token_ids"] == [1]
    assert "stop" not in sent  # stop sequences are matched on parsed content, by the gateway
    message = check_response("chat", response.content)["choices"][0]["message"]
    assert message["content"] == "The answer is 42 🦀."


def test_long_prompts_reach_the_engine_whole(
    frontend: Frontend, engine_server: tuple[FakeEngine, ServerThread]
) -> None:
    """A prompt past 16k ids has its engine body written off the event loop; same ids."""
    engine, engine_http = engine_server
    body = {"model": MODEL, "messages": [{"role": "user", "content": "many words " * 12_000}]}
    with serving(gateway_for(frontend, CompletionsBackend(engine_http.url))) as server:
        assert httpx.post(server.url + "/v1/chat/completions", json=body, timeout=60).status_code == 200
    expected = frontend.prepare("chat", json.dumps(body)).prompt_ids
    assert len(expected) > 16_384 and engine.requests[-1]["prompt"] == expected


def test_engine_bodies_write_the_ids_last_from_the_kept_json(frontend: Frontend) -> None:
    """``json_body``: the fields, then the ids, as one JSON object, whether the ids are the
    core's (their JSON kept and copied once) or a plain list; a turn that extends a kept
    prompt writes only its own ids' JSON for the first time."""
    first = {"model": MODEL, "messages": [{"role": "user", "content": "many words " * 3_000}]}
    second = {
        **first,
        "messages": [*first["messages"], {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}],
    }
    fields = {"model": "m", "stream": True, "n": 2, "structured_outputs": {"regex": "[a-z]+"}}
    earlier = frontend.prepare("chat", json.dumps(first)).prompt_ids
    assert 0 < earlier.unwritten_json() <= len(earlier)
    for key in ("prompt", "input_ids"):
        body = json_body(fields, key, earlier)
        assert json.loads(body) == {**fields, key: earlier.tolist()}
        assert list(json.loads(body)) == [*fields, key]
        assert body == json_body(fields, key, earlier.tolist())
    assert earlier.unwritten_json() == 0
    ids = frontend.prepare("chat", json.dumps(second)).prompt_ids
    assert 0 < ids.unwritten_json() < 100 < len(earlier) < len(ids)
    assert json.loads(json_body({}, "prompt", ids)) == {"prompt": ids.tolist()}
    assert ids.json_between(b"", b"") == ids.to_json() == json.dumps(ids.tolist(), separators=(",", ":")).encode()


def test_completions_backend_passes_output_constraints(
    frontend: Frontend, engine_server: tuple[FakeEngine, ServerThread]
) -> None:
    engine, engine_http = engine_server
    engine.script = script(frontend.tokenizer, '{"a": 1}')
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with serving(gateway_for(frontend, CompletionsBackend(engine_http.url))) as server:
        fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
        assert chat(server.url, response_format=fmt, thinking={"type": "disabled"}).status_code == 200
        assert engine.requests[-1]["structured_outputs"] == {"json": schema}
        messages = [{"role": "user", "content": "Reply in json"}]
        body = {"model": MODEL, "messages": messages, "response_format": {"type": "json_object"}}
        assert httpx.post(server.url + "/v1/chat/completions", json=body).status_code == 200
        assert engine.requests[-1]["structured_outputs"] == {"json_object": True}


def test_sglang_backend_reads_cumulative_ids_and_cache_hits(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    engine = FakeEngine(tokenizer, kind="sglang", script=script(tokenizer, per_chunk=3), cached_tokens=64)
    with serving(engine) as engine_http, serving(gateway_for(frontend, SGLangBackend(engine_http.url))) as server:
        response = chat(server.url, stream=True, stream_options={"include_usage": True}, max_tokens=99)
        events = check_stream("chat", response.content)
    sent = engine.requests[-1]
    assert sent["input_ids"][:1] == [0] and sent["stream"] is True
    assert sent["sampling_params"]["max_new_tokens"] == 99
    assert sent["sampling_params"]["skip_special_tokens"] is False
    reasoning = "".join(e["choices"][0]["delta"].get("reasoning_content") or "" for e in events if e["choices"])
    content = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert (reasoning, content) == ("Let me think.", "The answer is 42 🦀.")
    usage = events[-1]["usage"]
    assert usage["prompt_tokens"] == len(sent["input_ids"])
    assert usage["prompt_tokens_details"]["cached_tokens"] == 64


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_cache_hits_reported_after_the_output_reach_the_usage(
    frontend: Frontend, engine_server: tuple[FakeEngine, ServerThread], stream: bool
) -> None:
    """vLLM reports prefix-cache hits only in its final usage chunk, after every token."""
    engine, engine_http = engine_server
    engine.cached_tokens = 64
    with serving(gateway_for(frontend, CompletionsBackend(engine_http.url))) as server:
        extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if stream else {}
        response = chat(server.url, stream=stream, **extra)
    if stream:
        usage = check_stream("chat", response.content)[-1]["usage"]
    else:
        usage = check_response("chat", response.content)["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] == 64
    assert usage["prompt_cache_hit_tokens"] == 64


def test_client_disconnect_closes_the_engine_connection(
    frontend: Frontend, engine_server: tuple[FakeEngine, ServerThread]
) -> None:
    engine, engine_http = engine_server
    engine.behaviour, engine.interval = "endless", 0.01
    gateway = gateway_for(frontend, CompletionsBackend(engine_http.url))
    with serving(gateway) as server:
        leave_a_stream(server.url, MODEL)
        assert settle(lambda: engine.disconnects == 1 and engine.active == 0)
        assert settle(lambda: gateway.in_flight == 0)
        metrics = httpx.get(server.url + "/metrics").text
    assert "deepseek_recipe:client_disconnects_total 1.0" in metrics


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_pool_skips_a_dead_replica_and_spreads_load(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    first = FakeEngine(tokenizer, script=script(tokenizer), interval=0.02)
    second = FakeEngine(tokenizer, script=script(tokenizer), interval=0.02)
    dead = f"http://127.0.0.1:{_closed_port()}"
    with serving(first) as a, serving(second) as b:
        pool = BackendPool([CompletionsBackend(dead), CompletionsBackend(a.url), CompletionsBackend(b.url)])
        with serving(gateway_for(frontend, pool)) as server:
            import concurrent.futures

            with concurrent.futures.ThreadPoolExecutor(8) as workers:
                results = list(workers.map(lambda _: chat(server.url).status_code, range(8)))
    assert results == [200] * 8
    assert len(first.requests) + len(second.requests) == 8
    assert first.requests and second.requests  # both live replicas got work


def test_pool_with_every_replica_down_is_unavailable(frontend: Frontend) -> None:
    pool = BackendPool([CompletionsBackend(f"http://127.0.0.1:{_closed_port()}") for _ in range(2)])
    with serving(gateway_for(frontend, pool)) as server:
        start = time.monotonic()
        response = chat(server.url)
        assert time.monotonic() - start < 10
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "backend_unavailable"


# (name, ids, logprobs, stop ids) -> (ids kept, logprobs kept)
STOP_ID_CASES: list[tuple[str, list[int], list[str] | None, set[int], tuple[list[int], list[str] | None]]] = [
    ("nothing to drop", [1, 2], ["a", "b"], {9}, ([1, 2], ["a", "b"])),
    ("no stop ids", [1, 9], ["a", "b"], set(), ([1, 9], ["a", "b"])),
    ("the end of sentence goes with its logprob", [1, 9, 2], ["a", "b", "c"], {9}, ([1, 2], ["a", "c"])),
    ("only a stop id", [9], ["a"], {9}, ([], [])),
    ("no logprobs asked for", [1, 9], None, {9}, ([1], None)),
    ("logprobs that do not pair up are dropped", [1, 9, 2], ["a", "b"], {9}, ([1, 2], None)),
    ("... with no stop id in the chunk too", [1, 2], ["a"], {9}, ([1, 2], None)),
]


@pytest.mark.parametrize(
    ("ids", "logprobs", "stop", "expected"), [c[1:] for c in STOP_ID_CASES], ids=[c[0] for c in STOP_ID_CASES]
)
def test_both_engines_drop_stop_ids_with_their_logprobs(
    ids: list[int], logprobs: list[str] | None, stop: set[int], expected: tuple[list[int], list[str] | None]
) -> None:
    assert without_stop_ids(ids, logprobs, stop) == expected
