"""Slow and many connections, foreign hosts and cross-site pages, against a real uvicorn on
loopback with the gateway's own server settings (``uvicorn_options``), driven by raw sockets
where a well-behaved client cannot misbehave enough.

Waits are bounded by generous multiples of the configured timeouts, never by absolute times.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from deepseek_recipe.gateway import GatewaySettings, create_app
from deepseek_recipe.gateway.server import MAX_HEADER_BYTES, uvicorn_options, warnings_at_start
from tests.gateway_support import ServerThread, serving, settle
from tests.ops_support import serve_process

CHAT = "/v1/chat/completions"
BODY = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}


@contextmanager
def gateway(**overrides: Any) -> Iterator[ServerThread]:
    settings = GatewaySettings(log_requests=False, **overrides)
    with serving(create_app(settings), **uvicorn_options(settings)) as server:
        yield server


def connect(server: ServerThread, timeout: float) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=timeout)


def closed_by_server(sock: socket.socket) -> bytes:
    """What the server sent before closing ``sock`` (raises on the socket's timeout)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


# -- slow connections ------------------------------------------------------------------------


def test_headers_sent_too_slowly_close_the_connection() -> None:
    with gateway(header_timeout=0.5) as server:
        for opening in [b"", b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"]:
            with connect(server, timeout=10) as sock:  # 20 header timeouts
                sock.sendall(opening)
                assert closed_by_server(sock) == b""
        # On a kept-alive connection the next request's headers have the same deadline.
        with connect(server, timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
            sock.sendall(b"GET /health HTTP/1.1\r\n")
            assert closed_by_server(sock) == b""
        assert httpx.get(server.url + "/health").status_code == 200


def test_headers_past_the_size_limit_end_the_connection() -> None:
    with gateway() as server, connect(server, timeout=30) as sock:
        head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nx-filler: " + b"y" * (2 * MAX_HEADER_BYTES) + b"\r\n"
        try:
            sock.sendall(head)  # and never the end of the headers
            answer = closed_by_server(sock)
        except (ConnectionResetError, BrokenPipeError):
            answer = b"reset"  # closed with our bytes unread: the answer may be lost
        assert answer.startswith(b"HTTP/1.1 431") or answer == b"reset", answer[:100]


def test_a_large_body_is_no_large_header() -> None:
    """Only the request line and headers count against the header limit, however the body
    arrives (here megabytes, read in chunks far past the limit)."""
    body = {**BODY, "messages": [{"role": "user", "content": "word " * 400_000}]}
    with gateway() as server, connect(server, timeout=60) as sock:
        payload = json.dumps(body).encode()
        head = f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        sock.sendall(head.encode() + f"content-length: {len(payload)}\r\n\r\n".encode() + payload)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_open_connections_are_capped_and_half_sent_ones_time_out() -> None:
    with gateway(max_connections=8, header_timeout=1.0) as server:
        sockets = [connect(server, timeout=20) for _ in range(20)]
        try:
            for sock in sockets:
                sock.sendall(b"GET /health HTTP/1.1\r\n")  # never finished
            assert settle(lambda: server.connections() == 8)
            # The 12 past the cap were closed as soon as they were accepted.
            refused = 0
            for sock in sockets:
                sock.settimeout(0.5)
                try:
                    refused += closed_by_server(sock) == b""
                except ConnectionResetError:  # closed with our bytes unread
                    refused += 1
                except TimeoutError:
                    pass
            assert refused >= 12
            assert server.connections() <= 8
            # Once the half-sent requests time out, the server answers again.
            assert settle(lambda: server.connections() == 0, timeout=20)
            assert httpx.get(server.url + "/health").status_code == 200
        finally:
            for sock in sockets:
                sock.close()


def test_a_body_sent_slowly_holds_no_slot_and_times_out() -> None:
    with gateway(max_concurrent_requests=1, body_timeout=1.0) as server, connect(server, timeout=20) as slow:
        slow.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"content-length: 1000\r\n\r\n" + b'{"model": "'
        )
        time.sleep(0.2)  # the slow request is in, its body is not
        response = httpx.post(server.url + CHAT, json=BODY, timeout=20)
        assert response.status_code == 200, response.text
        answer = closed_by_server(slow)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        assert b'"code":"request_timeout"' in answer


# -- browsers and DNS rebinding ------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("POST", CHAT, BODY),
        ("POST", "/v1/messages", {**BODY, "max_tokens": 8}),
        ("GET", "/v1/models", None),
        ("POST", "/webui/api/render", {"protocol": "chat", "body": BODY}),
        ("GET", "/webui/", None),
        ("GET", "/health", None),
    ],
)
def test_a_foreign_host_is_refused_when_bound_to_loopback(method: str, path: str, body: Any) -> None:
    with gateway() as server:
        url = server.url + path
        for host in ["attacker.example", "attacker.example:8000", "127.0.0.1.attacker.example", "[::2]:80"]:
            response = httpx.request(method, url, json=body, headers={"host": host})
            assert response.status_code == 400, (host, response.text)
            error = response.json()
            message = error["error"]["message"] if "error" in error else ""
            assert message == "Invalid Host header"
        for host in [f"127.0.0.1:{server.port}", "localhost", "LOCALHOST:1", "[::1]:8000", "127.0.0.2", "a.localhost"]:
            response = httpx.request(method, url, json=body, headers={"host": host})
            assert response.status_code == 200, (host, response.text)


def test_hosts_beyond_loopback_are_a_setting() -> None:
    with gateway(allowed_hosts=["gw.internal"]) as server:
        assert httpx.get(server.url + "/health", headers={"host": "gw.internal:8000"}).status_code == 200
        assert httpx.get(server.url + "/health", headers={"host": "other.internal"}).status_code == 400
    with gateway(host="0.0.0.0") as server:  # listening beyond loopback: any name is ours
        assert httpx.get(server.url + "/health", headers={"host": "gw.example"}).status_code == 200
    with gateway(allowed_hosts=["*"]) as server:
        assert httpx.get(server.url + "/health", headers={"host": "anything.example"}).status_code == 200


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        None,
    ],
)
@pytest.mark.parametrize(
    "path", [CHAT, "/v1/responses", "/v1/messages", "/v1/messages/count_tokens", "/webui/api/render"]
)
def test_cross_site_simple_requests_are_refused(content_type: str | None, path: str) -> None:
    """A page on another site may POST these content types without asking the server first;
    every JSON route refuses them (and a body without a type), in the protocol's shape."""
    bodies: dict[str, dict[str, Any]] = {
        CHAT: BODY,
        "/v1/responses": {"model": "DeepSeek-V4-Pro", "input": "Hi", "max_output_tokens": 16},
        "/webui/api/render": {"protocol": "chat", "body": BODY},
    }
    body = bodies.get(path, BODY)
    headers = {"origin": "http://evil.example"}
    if content_type is not None:
        headers["content-type"] = content_type
    with gateway() as server:
        response = httpx.post(server.url + path, content=json.dumps(body).encode(), headers=headers)
        assert response.status_code == 415, response.text
        data = response.json()
        if path.startswith("/v1/messages"):
            assert data == {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "Content-Type must be application/json"},
            }
        else:
            assert data["error"]["code"] == "unsupported_media_type"
        assert "access-control-allow-origin" not in response.headers
        for json_type in ["application/json; charset=utf-8", "application/vnd.api+json"]:
            ok = httpx.post(server.url + path, content=json.dumps(body).encode(), headers={"content-type": json_type})
            assert ok.status_code == 200, ok.text


def test_cors_is_off_by_default_and_allowed_by_origin() -> None:
    preflight = {"origin": "http://app.example", "access-control-request-method": "POST"}
    with gateway() as server:
        response = httpx.options(server.url + CHAT, headers=preflight)
        assert "access-control-allow-origin" not in response.headers
        response = httpx.post(server.url + CHAT, json=BODY, headers={"origin": "http://app.example"})
        assert response.status_code == 200 and "access-control-allow-origin" not in response.headers
    with gateway(cors_origins=["http://app.example"]) as server:
        response = httpx.options(server.url + CHAT, headers=preflight)
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == "http://app.example"
        refused = httpx.options(server.url + CHAT, headers={**preflight, "origin": "http://evil.example"})
        assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
        response = httpx.post(server.url + CHAT, json=BODY, headers={"origin": "http://app.example"})
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == "http://app.example"


# -- serving beyond loopback without keys --------------------------------------------------------


def test_serving_beyond_loopback_without_keys_warns_at_start() -> None:
    warning = "listening on 0.0.0.0 with no API key"
    with serve_process("--host", "0.0.0.0") as served:
        pass
    assert any(warning in line for line in served.log), served.log
    assert warnings_at_start(GatewaySettings(host="0.0.0.0", api_keys=["k"])) == []  # type: ignore[list-item]
    assert warnings_at_start(GatewaySettings(host="::1")) == []
    assert warnings_at_start(GatewaySettings(host="localhost")) == []
