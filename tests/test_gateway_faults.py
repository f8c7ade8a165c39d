"""Hostile clients and faulty engines: every request ends with a protocol-correct error (or
terminal event) within the configured time, the server serves the next request, and no task,
request or engine connection is left behind."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.backends import Backend, BackendChunk, GenerationRequest
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.gateway.asgi import Message
from tests.fake_engines import Behaviour, FakeEngine
from tests.gateway_support import ServerThread, check_response, check_stream, parse_sse, serving, settle

MODEL = "DeepSeek-V4-Pro"
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def body_for(protocol: str, stream: bool = False, text: str = "Hello") -> dict[str, Any]:
    if protocol == "responses":
        return {"model": MODEL, "input": text, "stream": stream}
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": text}], "stream": stream}
    if protocol == "messages":
        body["max_tokens"] = 256
    return body


def assert_error_shape(protocol: str, response: httpx.Response, status: int) -> str:
    """The error body in the protocol's shape; returns its message."""
    assert response.status_code == status, response.text
    data = response.json()
    if protocol == "messages":
        assert data["type"] == "error" and set(data["error"]) == {"type", "message"}
        message: str = data["error"]["message"]
    else:
        assert set(data["error"]) == {"message", "type", "param", "code"}
        message = data["error"]["message"]
    assert message
    return message


@pytest.fixture(scope="session")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


@pytest.fixture(scope="module")
def demo_server(frontend: Frontend) -> Iterator[tuple[Gateway, ServerThread]]:
    settings = GatewaySettings(log_requests=False, max_body_bytes=64 * 1024, api_keys=["k-one", "k-two"])  # type: ignore[list-item]
    gateway = Gateway(settings=settings, frontend=frontend, backend=DemoEngine(frontend.tokenizer))
    with serving(gateway) as server:
        yield gateway, server


AUTH = {"authorization": "Bearer k-two", "content-type": "application/json"}


@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_auth_is_required_and_accepted_both_ways(demo_server: tuple[Gateway, ServerThread], protocol: str) -> None:
    _, server = demo_server
    url = server.url + PATHS[protocol]
    for headers in ({}, {"authorization": "Bearer wrong"}, {"x-api-key": "k-one-but-longer"}):
        assert_error_shape(protocol, httpx.post(url, json=body_for(protocol), headers=headers), 401)
    for headers in ({"authorization": "Bearer k-one"}, {"x-api-key": "k-two"}):
        assert httpx.post(url, json=body_for(protocol), headers=headers).status_code == 200
    assert httpx.get(server.url + "/health").status_code == 200  # liveness needs no key


@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_oversized_bodies_are_refused(demo_server: tuple[Gateway, ServerThread], protocol: str) -> None:
    _, server = demo_server
    url = server.url + PATHS[protocol]
    big = body_for(protocol, text="x" * 100_000)
    assert_error_shape(protocol, httpx.post(url, json=big, headers=AUTH), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer encoding
        yield b'{"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "'
        for _ in range(100):
            yield b"y" * 1024
        yield b'"}]}'

    response = httpx.post(url, content=chunks(), headers=AUTH)
    assert "content-length" not in response.request.headers
    assert_error_shape(protocol, response, 413)


@pytest.mark.parametrize("protocol", sorted(PATHS))
@pytest.mark.parametrize(
    "content",
    [b"[" * 5000 + b"]" * 5000, b'{"model": "\xff\xfe", "messages": []}', b"not json", b""],
    ids=["deep", "invalid_utf8", "not_json", "empty"],
)
def test_malformed_bodies_get_a_clear_400(
    demo_server: tuple[Gateway, ServerThread], protocol: str, content: bytes
) -> None:
    _, server = demo_server
    response = httpx.post(server.url + PATHS[protocol], content=content, headers=AUTH)
    message = assert_error_shape(protocol, response, 400)
    assert "\ufffd" not in message and "\xff" not in message


def test_json_depth_limit_is_configurable(frontend: Frontend) -> None:
    settings = GatewaySettings(log_requests=False, max_json_depth=4)
    with serving(Gateway(settings=settings, frontend=frontend, backend=DemoEngine(frontend.tokenizer))) as server:
        shallow = body_for("chat")  # nests 3 deep: object, messages list, message object
        assert httpx.post(server.url + PATHS["chat"], json=shallow).status_code == 200
        deep = {**shallow, "metadata": {"a": {"b": {"c": {}}}}}  # five deep
        message = assert_error_shape("chat", httpx.post(server.url + PATHS["chat"], json=deep), 400)
        assert message == "Request JSON nests deeper than 4 levels"
        brackets_in_text = body_for("chat", text="[[[[{{{{" * 10)
        assert httpx.post(server.url + PATHS["chat"], json=brackets_in_text).status_code == 200


def nested(levels: int) -> bytes:
    """A chat body whose objects nest ``levels`` deep (the body itself is the first level)."""
    metadata = '{"a": ' * (levels - 2) + "{}" + "}" * (levels - 2)
    return (
        '{"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "Hi"}], "metadata": %s}' % metadata
    ).encode()


def test_max_json_depth_is_the_deepest_nesting_served(frontend: Frontend) -> None:
    """``max_json_depth`` levels are served and one more is refused, at the default (the
    parser's own limit: 128 levels are refused) as below it; the docs say the same number."""
    json_type = {"content-type": "application/json"}
    for settings in (GatewaySettings(log_requests=False), GatewaySettings(log_requests=False, max_json_depth=10)):
        depth = settings.max_json_depth
        with serving(Gateway(settings=settings, frontend=frontend, backend=DemoEngine(frontend.tokenizer))) as server:
            served = httpx.post(server.url + PATHS["chat"], content=nested(depth), headers=json_type)
            assert served.status_code == 200, (depth, served.text)
            refused = httpx.post(server.url + PATHS["chat"], content=nested(depth + 1), headers=json_type)
            assert_error_shape("chat", refused, 400)
    default = GatewaySettings().max_json_depth
    docs = (Path(__file__).resolve().parents[1] / "docs" / "gateway.md").read_text(encoding="utf-8")
    assert f"| `max_json_depth` | {default} |" in docs
    assert f"nests deeper than {default}" in docs


def test_a_client_that_leaves_stops_the_schema_checks(frontend: Frontend, caplog: pytest.LogCaptureFixture) -> None:
    """A schema whose patterns take seconds to check: when its client leaves, the checks stop at
    the next pattern (the request's log line says how long it took) instead of running to the end
    on a core nobody is waiting for."""
    import socket

    properties = {f"p{i}": {"type": "string", "pattern": "[" + "a" * 200_000 + f"{i % 10}]"} for i in range(40)}
    schema = {"type": "object", "properties": properties}
    body = json.dumps(
        {
            "model": MODEL,
            "messages": [{"role": "user", "content": "json"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
        }
    ).encode()
    start = time.perf_counter()
    frontend.prepare("chat", body)  # the whole check, for comparison
    whole = time.perf_counter() - start
    settings = GatewaySettings(log_requests=True)
    with (
        serving(Gateway(settings=settings, frontend=frontend, backend=DemoEngine(frontend.tokenizer))) as server,
        caplog.at_level("INFO", logger="deepseek_recipe.gateway"),
    ):
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(head.encode() + body)
            time.sleep(whole / 10)  # the checks are under way

        def lines() -> list[dict[str, Any]]:
            return [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]

        assert settle(lambda: bool(lines()), timeout=10 * whole)
        (line,) = lines()
        assert line["status"] == 499 and line["client_disconnected"]
        assert line["duration_ms"] / 1e3 < whole / 2, (line, whole)


def test_errors_do_not_echo_long_request_values(demo_server: tuple[Gateway, ServerThread]) -> None:
    _, server = demo_server
    secret = "SECRET" * 2000
    for body in ({"model": secret, "messages": [{"role": "user", "content": "x"}]}, {"model": 5, "messages": secret}):
        response = httpx.post(server.url + "/v1/chat/completions", json=body, headers=AUTH)
        message = assert_error_shape("chat", response, 400)
        assert "SECRET" * 10 not in response.text and len(message) <= 300


def test_unknown_routes_and_methods(demo_server: tuple[Gateway, ServerThread]) -> None:
    _, server = demo_server
    assert httpx.get(server.url + "/v1/nothing").status_code == 404
    response = httpx.get(server.url + "/v1/chat/completions", headers=AUTH)
    assert response.status_code == 405 and response.headers["allow"] == "POST"


# -- faulty engines ---------------------------------------------------------------------------

TIMEOUTS = {"connect_timeout": 1.0, "first_token_timeout": 0.6, "idle_timeout": 0.6, "total_timeout": 2.0}


@pytest.fixture
def faulty(
    frontend: Frontend, tokenizer: dr.Tokenizer, request: pytest.FixtureRequest
) -> Iterator[tuple[FakeEngine, Gateway, ServerThread]]:
    behaviour: Behaviour = request.param
    engine = FakeEngine(tokenizer, behaviour=behaviour, script=[tokenizer.encode("Hi")] * 4, interval=0.05)
    with serving(engine) as engine_http:
        settings = GatewaySettings(log_requests=False, keepalive_interval=0.2, **TIMEOUTS)  # type: ignore[arg-type]
        gateway = Gateway(settings=settings, frontend=frontend, backend=CompletionsBackend(engine_http.url))
        with serving(gateway) as server:
            baseline = server.tasks()
            yield engine, gateway, server
            # Nothing left behind: the gateway's tasks, its requests, the engine's requests.
            assert settle(lambda: gateway.in_flight == 0)
            assert settle(lambda: engine.active == 0)
            assert settle(lambda: server.tasks() <= baseline), (server.tasks(), baseline)
            # ... and the next request is served (by the same faulty engine: it fails the same way).
            assert httpx.get(server.url + "/health").status_code == 200


FAULTS: dict[str, tuple[str, int, float]] = {
    # behaviour: (what the client sees, status of a whole response, seconds it may take)
    "status": ("backend_error", 502, TIMEOUTS["connect_timeout"]),
    "stall": ("backend_timeout", 504, TIMEOUTS["first_token_timeout"]),
    "die": ("backend_error", 502, 1.0),
    "garbage": ("backend_error", 502, 1.0),
    "endless": ("backend_timeout", 504, TIMEOUTS["total_timeout"]),
    "no_finish": ("backend_error", 502, 1.0),
}


@pytest.mark.parametrize("faulty", sorted(FAULTS), indirect=True)
@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_faulty_engine_whole_response(faulty: tuple[FakeEngine, Gateway, ServerThread], protocol: str) -> None:
    engine, _, server = faulty
    _, status, seconds = FAULTS[engine.behaviour]
    start = time.monotonic()
    response = httpx.post(server.url + PATHS[protocol], json=body_for(protocol), timeout=30)
    assert time.monotonic() - start < seconds + 3
    assert_error_shape(protocol, response, status)


@pytest.mark.parametrize("faulty", sorted(FAULTS), indirect=True)
@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_faulty_engine_stream(faulty: tuple[FakeEngine, Gateway, ServerThread], protocol: str) -> None:
    engine, _, server = faulty
    code, status, seconds = FAULTS[engine.behaviour]
    start = time.monotonic()
    response = httpx.post(server.url + PATHS[protocol], json=body_for(protocol, stream=True), timeout=30)
    assert time.monotonic() - start < seconds + 3
    if engine.behaviour == "status":  # refused before the stream began: a plain error response
        assert_error_shape(protocol, response, status)
        return
    assert response.status_code == 200
    events = parse_sse(response.content)
    name, data = events[-1]
    if protocol == "chat":
        assert name is None and '"error"' in data and code in data
        check_stream("chat", response.content.rsplit(b"data: ", 1)[0] + b"data: [DONE]\n\n")
    else:
        assert (name == "error" and code in data) or (protocol == "messages" and "api_error" in data)
        head = response.content.rsplit(b"event: error", 1)[0]
        if head.strip():
            check_stream(protocol, head)
    if engine.behaviour == "stall":
        assert response.content.count(b": keep-alive") >= 2  # the client heard from us while waiting


def test_unreachable_engine(frontend: Frontend) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gateway = Gateway(
        settings=GatewaySettings(log_requests=False),
        frontend=frontend,
        backend=CompletionsBackend(f"http://127.0.0.1:{port}"),
    )
    with serving(gateway) as server:
        for protocol in PATHS:
            for stream in (False, True):
                response = httpx.post(server.url + PATHS[protocol], json=body_for(protocol, stream=stream))
                assert_error_shape(protocol, response, 503)


def test_too_many_requests(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    engine = FakeEngine(tokenizer, behaviour="stall")
    with serving(engine) as engine_http:
        settings = GatewaySettings(log_requests=False, max_concurrent_requests=1, first_token_timeout=3)
        gateway = Gateway(settings=settings, frontend=frontend, backend=CompletionsBackend(engine_http.url))
        with serving(gateway) as server:
            with httpx.stream("POST", server.url + PATHS["chat"], json=body_for("chat", stream=True)) as first:
                assert first.status_code == 200
                assert settle(lambda: gateway.in_flight == 1)
                for protocol in PATHS:
                    assert_error_shape(protocol, httpx.post(server.url + PATHS[protocol], json=body_for(protocol)), 429)
            assert settle(lambda: gateway.in_flight == 0 and engine.active == 0)
            ok = httpx.post(server.url + "/v1/models")
            assert ok.status_code == 405


def test_whole_response_from_demo_after_faults(demo_server: tuple[Gateway, ServerThread]) -> None:
    gateway, server = demo_server
    for protocol in PATHS:
        response = httpx.post(server.url + PATHS[protocol], json=body_for(protocol), headers=AUTH)
        check_response(protocol, response.content)
    assert settle(lambda: gateway.in_flight == 0)


class _EndsAsTheClientLeaves(Backend):
    """An engine that sends one token, then ends its stream at the moment its client leaves
    (as an engine does whose request the gateway is just aborting)."""

    name = "ends-as-the-client-leaves"

    def __init__(self, token: int) -> None:
        self.token = token
        self.client_left = asyncio.Event()

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        yield BackendChunk(token_ids=[self.token])
        await self.client_left.wait()


def test_a_client_that_leaves_as_the_engine_ends_is_not_an_engine_failure(
    frontend: Frontend, caplog: pytest.LogCaptureFixture
) -> None:
    """The engine's stream ending in the same step as the client's disconnect arrives is the
    client leaving, not the engine failing: no engine error is logged or counted."""
    backend = _EndsAsTheClientLeaves(frontend.tokenizer.encode(" on")[0])
    gateway = Gateway(settings=GatewaySettings(log_requests=True), frontend=frontend, backend=backend)
    body = json.dumps({**body_for("chat"), "stream": True}).encode()
    output = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if body_sent.is_set():
            await output.wait()  # the client has seen the first output, and leaves
            backend.client_left.set()  # the engine's stream ends ...
            await asyncio.sleep(0)  # ... and its end is taken in the step the disconnect arrives
            return {"type": "http.disconnect"}
        body_sent.set()
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            output.set()

    body_sent = asyncio.Event()
    with caplog.at_level("INFO", logger="deepseek_recipe.gateway"):
        asyncio.run(gateway(_chat_scope(body), receive, send))
    (line,) = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]
    assert line["status"] == 499 and line["client_disconnected"] and line["error"] is None, line
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    counted = [sample.value for metric in gateway.metrics.backend_errors.collect() for sample in metric.samples]
    assert not any(counted), counted


def _chat_scope(body: bytes) -> dict[str, Any]:
    """An ASGI scope for a Chat request with ``body``."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": PATHS["chat"],
        "raw_path": PATHS["chat"].encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }


class _Endless(Backend):
    """An engine that writes one token every few milliseconds until its stream is closed."""

    name = "endless"

    def __init__(self, token: int) -> None:
        self.token = token
        self.closed = False

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        try:
            while True:
                yield BackendChunk(token_ids=[self.token])
                await asyncio.sleep(0.005)
        finally:
            self.closed = True


def test_a_request_cancelled_from_outside_stays_cancelled_and_closes_its_engine_stream(frontend: Frontend) -> None:
    """A cancellation that is not the request's own (the server's, say) goes through the
    exchange, which takes back only the cancellations it makes itself, and the engine's stream is
    closed before the request ends."""
    backend = _Endless(frontend.tokenizer.encode(" on")[0])
    gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend, backend=backend)
    body = json.dumps({**body_for("chat"), "stream": True, "max_tokens": 100_000}).encode()

    async def scenario() -> None:
        output = asyncio.Event()
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.Event().wait()  # the client stays
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                output.set()

        request = asyncio.ensure_future(gateway(_chat_scope(body), receive, send))
        await asyncio.wait_for(output.wait(), 30)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert backend.closed

    asyncio.run(scenario())
