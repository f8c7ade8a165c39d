"""What the HTTP backends share: the engine connection (``_client.py``), a JSON POST answered by
server-sent events, bounded line reading, and failures turned into :class:`BackendError` (never
echoing a body)."""

from __future__ import annotations

import urllib.parse
from abc import abstractmethod
from collections.abc import AsyncGenerator, Callable, Collection
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import orjson

from deepseek_recipe._native import TokenIds
from deepseek_recipe.backends import Backend, BackendError, GenerationRequest
from deepseek_recipe.backends._client import EngineClient, EngineError, EngineResponse

T = TypeVar("T")
_JSON_HEADERS = [(b"content-type", b"application/json")]

INLINE_BODY_IDS = 16_384
"""A request body with up to this many ids to write (as JSON or varints; not counting what is
kept from the turn a prompt extends, which is only copied) is written on the event loop."""

HEALTH_TIMEOUT = 2.0
"""Seconds an engine's health check may take before it counts as failed."""

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The longest server-sent event accepted from an engine (a first chunk may echo the prompt's ids)."""


class HttpBackend(Backend):
    """A backend that POSTs JSON to ``url`` and reads server-sent events back."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        """``url``: the engine's endpoint, ``http://`` or ``https://`` (checked against the
        system's certificates). Only connecting is timed here: waiting for output is timed by
        the gateway, which knows whether it waits for a first token (prefill can take minutes)
        or the next one."""
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._client = EngineClient(url, connect_timeout=connect_timeout)
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def aclose(self) -> None:
        self._client.close()

    async def healthy(self) -> bool:
        """``GET /health`` answers 200 within :data:`HEALTH_TIMEOUT` (vLLM and SGLang serve it)."""
        response: EngineResponse | None = None
        try:
            with anyio.fail_after(HEALTH_TIMEOUT):
                response = await self._client.request("GET", "/health", [])
                async for _ in response.chunks():
                    pass
                return response.status == 200
        except (EngineError, TimeoutError):
            return False
        finally:
            if response is not None:
                response.close()

    @abstractmethod
    def body(self, request: GenerationRequest) -> bytes:
        """The engine's JSON request body for ``request``."""

    async def _events(self, request: GenerationRequest) -> AsyncGenerator[dict[str, Any] | None, None]:
        """``None`` once the engine accepted the request, then each ``data:`` JSON object."""
        self._in_flight += 1
        try:
            ids = request.prompt_ids
            body = await write_body(self.body, request, ids.unwritten_json() if isinstance(ids, TokenIds) else len(ids))
            headers = _JSON_HEADERS
            if request.observer is not None and request.observer.engine_headers:
                headers = [*headers, *request.observer.engine_headers]
            try:
                response = await self._client.request("POST", self._target, headers, body)
            except EngineError as error:
                if error.kind == "timeout":
                    raise BackendError("timeout", "connecting to the engine timed out", backend=self.name) from None
                raise BackendError("connect", f"cannot reach the engine: {error}", backend=self.name) from None
            try:
                if response.status != 200:
                    raise BackendError("status", f"the engine answered HTTP {response.status}", backend=self.name)
                yield None
                done = False
                async for line in _lines(response):
                    if done or not line.startswith(b"data:"):
                        continue  # comments, event names, blank lines; anything after [DONE]
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        # Read on to the end of the body, so the connection can be reused.
                        done = True
                        continue
                    try:
                        event = orjson.loads(data)
                    except orjson.JSONDecodeError:
                        raise BackendError(
                            "protocol", "the engine sent an event that is not JSON", accepted=True, backend=self.name
                        ) from None
                    if not isinstance(event, dict):
                        raise BackendError(
                            "protocol",
                            "the engine sent an event that is not an object",
                            accepted=True,
                            backend=self.name,
                        )
                    if "error" in event and not event.get("choices"):
                        raise BackendError(
                            "status", "the engine reported an error mid-stream", accepted=True, backend=self.name
                        )
                    yield event
            except EngineError as error:
                raise BackendError(
                    "closed", f"the engine broke the stream: {error}", accepted=True, backend=self.name
                ) from None
            finally:
                response.close()
        finally:
            self._in_flight -= 1


async def write_body(write: Callable[[GenerationRequest], bytes], request: GenerationRequest, unwritten: int) -> bytes:
    """``write(request)``: on the event loop, or in a worker thread when more than
    :data:`INLINE_BODY_IDS` of its ids are still to be written (as digits or varints)."""
    if unwritten > INLINE_BODY_IDS:
        return await anyio.to_thread.run_sync(write, request)
    return write(request)


async def _lines(response: EngineResponse) -> AsyncGenerator[bytes, None]:
    """The response's lines, each at most :data:`MAX_EVENT_BYTES` long (linear in the body)."""
    parts: list[bytes] = []
    size = 0
    async for data in response.chunks():  # no content coding: none is asked for
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            parts.append(data[start:end])
            yield b"".join(parts).rstrip(b"\r")
            parts, size, start = [], 0, end + 1
        if start < len(data):
            parts.append(data[start:])
            size += len(data) - start
            if size > MAX_EVENT_BYTES:
                raise BackendError("protocol", "the engine sent an event that is too long", accepted=True)
    if parts:
        yield b"".join(parts)


def nonnegative_int(value: Any) -> int | None:
    """``value`` when the engine sent a count (a non-negative integer), else ``None``."""
    return value if isinstance(value, int) and value >= 0 else None


def without_stop_ids(
    ids: list[int], logprobs: list[T] | None, stop_ids: Collection[int]
) -> tuple[list[int], list[T] | None]:
    """An engine's new output ids without the stop ids (the end of sentence is not output),
    and their logprobs with them: ``None`` when the engine's do not pair up one to one with
    ``ids``."""
    if logprobs is not None and len(logprobs) != len(ids):
        logprobs = None
    if not stop_ids or not any(i in stop_ids for i in ids):
        return ids, logprobs
    kept = [i for i in ids if i not in stop_ids]
    if logprobs is not None:
        logprobs = [lp for i, lp in zip(ids, logprobs) if i not in stop_ids]
    return kept, logprobs
