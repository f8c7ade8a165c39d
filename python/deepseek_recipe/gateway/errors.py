"""Error responses in each protocol's own shape, before a stream starts and in the middle of one.

OpenAI (Chat Completions, Responses, and the gateway's own routes) answers
``{"error": {"message", "type", "param", "code"}}``; Anthropic Messages answers
``{"type": "error", "error": {"type", "message"}}``. Mid-stream, Chat sends the same body as a
``data:`` line, Responses an ``error`` event, Messages an ``error`` event.

Messages carry at most a short excerpt of request content: the library's messages quote names
and values from the request (a model name, a tool name, a value of the wrong type), as the
official APIs do, so every quoted span and every run without spaces longer than
:data:`QUOTE_LIMIT` characters is cut, and the whole message to :data:`MESSAGE_LIMIT`.
"""

from __future__ import annotations

import re
from typing import Literal

import orjson

from deepseek_recipe.frontend import Protocol
from deepseek_recipe.gateway.asgi import Send, send_json

QUOTE_LIMIT = 48
MESSAGE_LIMIT = 300

ErrorKind = Literal[
    "invalid_request",
    "authentication",
    "not_found",
    "method_not_allowed",
    "too_large",
    "unsupported_media_type",
    "request_timeout",
    "rate_limited",
    "backend",
    "backend_timeout",
    "backend_unavailable",
    "store_unavailable",
    "shutting_down",
    "internal",
]

# kind -> (HTTP status, OpenAI type, OpenAI code, Anthropic type)
_KINDS: dict[ErrorKind, tuple[int, str, str | None, str]] = {
    "invalid_request": (400, "invalid_request_error", "invalid_request_error", "invalid_request_error"),
    "authentication": (401, "authentication_error", "invalid_api_key", "authentication_error"),
    "not_found": (404, "not_found_error", "not_found", "not_found_error"),
    "method_not_allowed": (405, "invalid_request_error", "method_not_allowed", "invalid_request_error"),
    "too_large": (413, "invalid_request_error", "request_too_large", "request_too_large"),
    "unsupported_media_type": (415, "invalid_request_error", "unsupported_media_type", "invalid_request_error"),
    "request_timeout": (408, "invalid_request_error", "request_timeout", "invalid_request_error"),
    "rate_limited": (429, "rate_limit_error", "rate_limit_exceeded", "rate_limit_error"),
    "backend": (502, "server_error", "backend_error", "api_error"),
    "backend_timeout": (504, "server_error", "backend_timeout", "api_error"),
    "backend_unavailable": (503, "server_error", "backend_unavailable", "overloaded_error"),
    "store_unavailable": (503, "server_error", "store_unavailable", "api_error"),
    "shutting_down": (503, "server_error", "service_unavailable", "overloaded_error"),
    "internal": (500, "server_error", "internal_error", "api_error"),
}

_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|'[^']*'|[^\s`\"']+")


def public_message(message: str) -> str:
    """``message`` with long quoted spans cut and its length bounded (see the module doc)."""

    def cut(match: re.Match[str]) -> str:
        span = match.group(0)
        if len(span) <= QUOTE_LIMIT:
            return span
        closing = span[-1] if span[0] in "`\"'" else ""
        return span[: QUOTE_LIMIT - 2] + "…" + closing

    short = _QUOTED.sub(cut, message[: MESSAGE_LIMIT * 64])
    return short if len(short) <= MESSAGE_LIMIT else short[: MESSAGE_LIMIT - 1] + "…"


class GatewayError(Exception):
    """An error the gateway answers with: a kind (which fixes the status), a message, and
    ``headers`` sent with it (``retry-after`` and the rate limits of a 429)."""

    def __init__(self, kind: ErrorKind, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.headers = headers or []

    @property
    def status(self) -> int:
        return _KINDS[self.kind][0]

    @property
    def code(self) -> str | None:
        """OpenAI's ``code`` for this error."""
        return _KINDS[self.kind][2]

    def body(self, protocol: Protocol | None) -> bytes:
        """The response body in ``protocol``'s shape (OpenAI's for ``None``)."""
        _, openai_type, code, anthropic_type = _KINDS[self.kind]
        message = public_message(self.message)
        if protocol == "messages":
            return orjson.dumps({"type": "error", "error": {"type": anthropic_type, "message": message}})
        return orjson.dumps({"error": {"message": message, "type": openai_type, "param": None, "code": code}})

    def sse(self, protocol: Protocol, sequence_number: int) -> bytes:
        """The protocol's mid-stream error event (``sequence_number``: Responses' next number)."""
        code = self.code
        if protocol == "chat":
            return b"data: " + self.body(protocol) + b"\n\n"
        if protocol == "responses":
            event = {
                "type": "error",
                "code": code,
                "message": public_message(self.message),
                "param": None,
                "sequence_number": sequence_number,
            }
            return b"event: error\ndata: " + orjson.dumps(event) + b"\n\n"
        return b"event: error\ndata: " + self.body(protocol) + b"\n\n"


def not_json() -> GatewayError:
    """The refusal of a body that is not said to be JSON on a JSON route (415)."""
    return GatewayError("unsupported_media_type", "Content-Type must be application/json")


async def send_error(
    send: Send, error: GatewayError, protocol: Protocol | None = None, allow: bytes | None = None
) -> None:
    """Answer ``error`` in ``protocol``'s shape (``allow``: the methods a 405 names). A body not
    read to its end (too large, too late) leaves the connection unusable, so it is closed; a
    client already gone is not an error."""
    headers = [(b"connection", b"close")] if error.kind in ("too_large", "request_timeout") else []
    if allow is not None:
        headers.append((b"allow", allow))
    headers += error.headers
    try:
        await send_json(send, error.status, error.body(protocol), headers)
    except OSError:
        pass
