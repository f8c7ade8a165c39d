"""The few ASGI pieces the gateway needs: message types, headers, whole responses."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ClientGone(Exception):
    """The client disconnected; nothing more can be sent."""


async def disconnected(receive: Receive) -> None:
    """Until the client is gone (what else it sends is dropped)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


def json_content(scope: Scope) -> bool:
    """Whether a request says its body is JSON (``application/json`` or ``application/*+json``).
    A browser sends ``text/plain``, form and multipart bodies, or none, to another site without
    asking it first; JSON only after the site agreed (CORS), so JSON routes take only JSON."""
    kind = (header(scope, b"content-type") or b"").split(b";", 1)[0].strip().lower()
    return kind == b"application/json" or (kind.startswith(b"application/") and kind.endswith(b"+json"))


def request_id(scope: Scope) -> str:
    supplied = header(scope, b"x-request-id")
    if supplied is not None and 0 < len(supplied) <= 64 and supplied.isascii() and supplied.isalnum():
        return supplied.decode()
    return secrets.token_hex(8)


async def send_bytes(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]], *, head: bool = False
) -> None:
    """A whole response; ``head``: the headers only (the answer to ``HEAD``: the length the
    ``GET`` would have)."""
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def send_json(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None, *, head: bool = False
) -> None:
    await send_bytes(send, status, body, [(b"content-type", b"application/json"), *(headers or [])], head=head)
