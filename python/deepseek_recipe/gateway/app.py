"""The gateway: a pure ASGI middleware serving the DeepSeek routes, and an app factory.

Routes (everything else goes to the wrapped app):

=======  ================================  ===============================================
POST     ``/v1/chat/completions``          OpenAI Chat Completions, streamed or not
POST     ``/v1/responses``                 OpenAI Responses, streamed or not
POST     ``/v1/messages``                  Anthropic Messages, streamed or not
POST     ``/v1/messages/count_tokens``     Anthropic token count (the ids the engine gets)
GET      ``/v1/models``                    served models (Anthropic's shape when the client
                                           sends ``anthropic-version``, else OpenAI's)
GET      ``/health``                       liveness
GET      ``/metrics``                      Prometheus text format
GET      ``/``, ``/webui/…``               the visualizer page and its API (``webui.py``)
=======  ================================  ===============================================

One request: authenticate, read the body under the size limit, prepare it off the event loop
(conversion, rendering and encoding release the GIL), ask the engine, and turn its output into
the protocol's events as it arrives. The engine's output is pumped by its own task into a small
buffer, so waiting on it can time out or send keep-alive comments without disturbing it, and a
third task watches for the client going away; whichever way the request ends, the engine's
stream is closed in a shielded scope, which aborts its request.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from deepseek_recipe._native import ConversionError, ConversionOptions, Tokenizer
from deepseek_recipe.backends import Backend, BackendChunk, BackendError, GenerationRequest
from deepseek_recipe.frontend import Decoder, Event, Frontend, PreparedRequest, Protocol
from deepseek_recipe.gateway.errors import GatewayError, public_message
from deepseek_recipe.gateway.metrics import Metrics
from deepseek_recipe.gateway.settings import GatewaySettings
from deepseek_recipe.gateway.webui import WebUI

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

logger = logging.getLogger("deepseek_recipe.gateway")

_GENERATE: dict[str, Protocol] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
_ROUTES: dict[str, tuple[str, Protocol | None]] = {
    **{path: ("POST", protocol) for path, protocol in _GENERATE.items()},
    "/v1/messages/count_tokens": ("POST", "messages"),
    "/v1/models": ("GET", None),
    "/health": ("GET", None),
    "/metrics": ("GET", None),
}
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_KEEPALIVE = b": keep-alive\n\n"
# Bodies up to this size are prepared on the event loop: that takes tens of microseconds,
# less than handing the work to a thread and back. Larger ones go to a worker thread.
_INLINE_PREPARE_BYTES = 16 * 1024


class _ClientGone(Exception):
    """The client disconnected; nothing more can be sent."""


@dataclass
class _Record:
    """What one request did, for its log line and metrics (never its text)."""

    protocol: Protocol
    request_id: str
    started: float = field(default_factory=time.perf_counter)
    status: int = 200
    stream: bool = False
    model: str | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    prepare_seconds: float | None = None
    ttft: float | None = None
    finish: str | None = None
    error: str | None = None
    disconnected: bool = False
    last_output: float | None = None


class Gateway:
    """Pure ASGI middleware: serves the DeepSeek routes, passes everything else to ``app``.

    ``Gateway(app, settings)`` wraps any ASGI app; :func:`create_app` builds a standalone
    Starlette app around one. ``frontend``, ``backend`` and ``metrics`` default to what
    ``settings`` describes. The backend is closed when the server shuts down (ASGI lifespan).
    The visualizer page is served at ``/webui/`` (and ``/`` leads there when ``page_at_root``,
    by default when there is no app of yours) unless ``settings.webui`` is off.
    """

    def __init__(
        self,
        app: ASGIApp | None = None,
        settings: GatewaySettings | None = None,
        *,
        frontend: Frontend | None = None,
        backend: Backend | None = None,
        metrics: Metrics | None = None,
        page_at_root: bool | None = None,
    ) -> None:
        self.app = app
        self.settings = settings if settings is not None else GatewaySettings()
        self.frontend = frontend if frontend is not None else frontend_from_settings(self.settings)
        self.backend = backend if backend is not None else backend_from_settings(self.settings, self.frontend)
        self.metrics = metrics if metrics is not None else Metrics()
        self._keys = [key.get_secret_value().encode() for key in self.settings.api_keys]
        self._in_flight = 0
        self._created = int(time.time())
        at_root = app is None if page_at_root is None else page_at_root
        self._webui = WebUI(self, at_root=at_root) if self.settings.webui else None

    @property
    def in_flight(self) -> int:
        """Requests being served now."""
        return self._in_flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        route = _ROUTES.get(scope.get("path", "")) if scope["type"] == "http" else None
        webui = self._webui
        if route is None and webui is not None and scope["type"] == "http" and webui.handles(scope["path"]):
            with contextlib.suppress(_ClientGone):
                await webui(scope, receive, send)
            return
        if route is None:
            if self.app is None:
                await _send_json(send, 404, GatewayError("not_found", "Not found").body(None))
            else:
                await self.app(scope, receive, send)
            return
        method, protocol = route
        if scope["method"] != method:
            error = GatewayError("method_not_allowed", f"Method {scope['method']} is not allowed here")
            await _send_json(send, 405, error.body(protocol), [(b"allow", method.encode())])
            return
        path = scope["path"]
        if path in _GENERATE:
            await self._generate(_GENERATE[path], scope, receive, send)
        elif path == "/v1/messages/count_tokens":
            await self._count_tokens(scope, receive, send)
        elif path == "/v1/models":
            await self._models(scope, send)
        elif path == "/health":
            await _send_json(send, 200, b'{"status":"ok"}')
        else:
            body = await anyio.to_thread.run_sync(self.metrics.exposition)
            await _send(send, 200, body, [(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")])

    async def aclose(self) -> None:
        """Close the backend's connections."""
        await self.backend.aclose()

    # -- lifespan ---------------------------------------------------------------------------

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return

        async def receive_and_close() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                await self.aclose()
            return message

        await self.app(scope, receive_and_close, send)

    # -- routes -----------------------------------------------------------------------------

    async def _models(self, scope: Scope, send: Send) -> None:
        anthropic = _header(scope, b"anthropic-version") is not None
        if not self._authorized(scope):
            await self._fail(send, "messages" if anthropic else None, _unauthorized())
            return
        names = self.frontend.models
        if anthropic:
            created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._created))
            data: list[dict[str, Any]] = [
                {"type": "model", "id": name, "display_name": name, "created_at": created} for name in names
            ]
            body = {"data": data, "has_more": False, "first_id": names[0] if names else None}
            body["last_id"] = names[-1] if names else None
        else:
            data = [{"id": n, "object": "model", "created": self._created, "owned_by": "deepseek"} for n in names]
            body = {"object": "list", "data": data}
        await _send_json(send, 200, orjson.dumps(body))

    async def _count_tokens(self, scope: Scope, receive: Receive, send: Send) -> None:
        record = _Record("messages", _request_id(scope))
        try:
            if not self._authorized(scope):
                raise _unauthorized()
            body = await self._read_body(scope, receive)
            count = await anyio.to_thread.run_sync(self._count, body)
            await _send_json(send, 200, orjson.dumps({"input_tokens": count}))
        except GatewayError as error:
            record.status, record.error = error.status, error.kind
            await self._fail(send, "messages", error)
        except _ClientGone:
            record.disconnected = True

    def _count(self, body: bytes) -> int:
        try:
            return self.frontend.count_tokens("messages", body)
        except (ValueError, ConversionError) as error:
            raise GatewayError("invalid_request", str(error)) from None

    async def _generate(self, protocol: Protocol, scope: Scope, receive: Receive, send: Send) -> None:
        record = _Record(protocol, _request_id(scope))
        self._in_flight += 1
        self.metrics.running.inc()
        exchange: _Exchange | None = None
        try:
            if not self._authorized(scope):
                raise _unauthorized()
            if self._in_flight > self.settings.max_concurrent_requests:
                raise GatewayError("rate_limited", "Too many requests in flight; retry later")
            body = await self._read_body(scope, receive)
            if len(body) <= _INLINE_PREPARE_BYTES:
                prepared = self._prepare(protocol, body, record)
            else:
                prepared = await anyio.to_thread.run_sync(self._prepare, protocol, body, record)
            record.model, record.stream = prepared.model, prepared.stream
            exchange = _Exchange(self, prepared, record, receive, send)
            await exchange.run()
        except GatewayError as error:
            record.status, record.error = error.status, record.error or error.kind
            if exchange is None or not exchange.started:
                await self._fail(send, protocol, error)
        except _ClientGone:
            record.disconnected, record.status = True, 499
        finally:
            self._in_flight -= 1
            self.metrics.running.dec()
            self._finish(record)

    def _prepare(self, protocol: Protocol, body: bytes, record: _Record | None = None) -> PreparedRequest:
        start = time.perf_counter()
        try:
            prepared = self.frontend.prepare(protocol, body)
        except (ValueError, ConversionError) as error:
            raise GatewayError("invalid_request", str(error)) from None
        except RuntimeError as error:  # the tokenizer cannot encode this prompt
            raise GatewayError("internal", public_message(str(error))) from None
        if record is not None:
            record.prepare_seconds = time.perf_counter() - start
        return prepared

    # -- pieces -----------------------------------------------------------------------------

    def _authorized(self, scope: Scope) -> bool:
        if not self._keys:
            return True
        supplied = _header(scope, b"x-api-key")
        authorization = _header(scope, b"authorization")
        if authorization is not None and authorization[:7].lower() == b"bearer ":
            supplied = authorization[7:].strip()
        if supplied is None:
            return False
        matched = False
        for key in self._keys:  # every key compared, in constant time each
            matched |= hmac.compare_digest(key, supplied)
        return matched

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.settings.max_body_bytes
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise GatewayError("too_large", f"Request body is larger than {limit} bytes")
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone
            part = message.get("body", b"")
            size += len(part)
            if size > limit:
                raise GatewayError("too_large", f"Request body is larger than {limit} bytes")
            parts.append(part)
            if not message.get("more_body", False):
                return b"".join(parts)

    async def _fail(self, send: Send, protocol: Protocol | None, error: GatewayError) -> None:
        try:
            await _send_json(send, error.status, error.body(protocol))
        except OSError:
            pass

    def _finish(self, record: _Record) -> None:
        m, p = self.metrics, record.protocol
        elapsed = time.perf_counter() - record.started
        m.requests.labels(p, str(record.status)).inc()
        m.e2e.labels(p).observe(elapsed)
        if record.prepare_seconds is not None:
            m.prepare.labels(p).observe(record.prepare_seconds)
        if record.prompt_tokens:
            m.prompt_tokens.inc(record.prompt_tokens)
            m.prompt_tokens_hist.observe(record.prompt_tokens)
        if record.cached_tokens:
            m.cached_tokens.inc(record.cached_tokens)
        if record.completion_tokens:
            m.generation_tokens.inc(record.completion_tokens)
        if record.disconnected:
            m.disconnects.inc()
        if self.settings.log_requests:
            line = {
                "request_id": record.request_id,
                "protocol": p,
                "model": record.model,
                "stream": record.stream,
                "status": record.status,
                "finish": record.finish,
                "error": record.error,
                "client_disconnected": record.disconnected,
                "prompt_tokens": record.prompt_tokens,
                "cached_tokens": record.cached_tokens,
                "completion_tokens": record.completion_tokens,
                "prepare_ms": None if record.prepare_seconds is None else round(record.prepare_seconds * 1e3, 3),
                "ttft_ms": None if record.ttft is None else round(record.ttft * 1e3, 3),
                "duration_ms": round(elapsed * 1e3, 3),
            }
            logger.info(orjson.dumps(line).decode())


class _Exchange:
    """One prepared request against the engine: pump, watch, respond (see the module doc)."""

    def __init__(self, gateway: Gateway, prepared: PreparedRequest, record: _Record, receive: Receive, send: Send):
        self.gateway, self.settings = gateway, gateway.settings
        self.prepared, self.record = prepared, record
        self.receive, self._send = receive, send
        self.decoder: Decoder = prepared.decoder()
        self.started = False  # the HTTP response has begun
        self.complete = False  # ... and ended
        self._held: BackendError | None = None  # an engine error seen while draining ready chunks
        self.deadline = record.started + self.settings.total_timeout

    async def run(self) -> None:
        outbox, inbox = anyio.create_memory_object_stream[BackendChunk | BackendError](16)
        request = GenerationRequest.from_prepared(self.prepared, self.decoder.response_id)
        failure: GatewayError | _ClientGone | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._pump, request, outbox)
                group.start_soon(self._watch, group.cancel_scope)
                try:
                    await self._respond(inbox)
                except (GatewayError, _ClientGone) as error:  # raised here, not in a group
                    failure = error
                finally:
                    group.cancel_scope.cancel()
        finally:
            self.decoder.close()
            inbox.close()
        if self.record.disconnected:
            raise _ClientGone
        if failure is not None:
            raise failure

    async def _pump(self, request: GenerationRequest, outbox: MemoryObjectSendStream[BackendChunk | BackendError]) -> None:
        """The engine's chunks into ``outbox``; its stream is always closed, shielded."""
        generator = self.gateway.backend.generate(request)
        try:
            async with outbox:
                try:
                    async for chunk in generator:
                        await outbox.send(chunk)
                except BackendError as error:
                    await outbox.send(error)
                except (anyio.get_cancelled_exc_class(), anyio.BrokenResourceError, anyio.ClosedResourceError):
                    raise
                except Exception as error:  # a backend bug must not take the server down
                    logger.exception("backend %s failed", self.gateway.backend.name)
                    await outbox.send(BackendError("protocol", f"backend failed: {type(error).__name__}"))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await generator.aclose()

    async def _watch(self, scope: anyio.CancelScope) -> None:
        """Cancel everything when the client disconnects."""
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                # Servers also report a disconnect once the response is complete.
                self.record.disconnected = not self.complete
                scope.cancel()
                return

    async def _respond(self, inbox: MemoryObjectReceiveStream[BackendChunk | BackendError]) -> None:
        settings, decoder, record = self.settings, self.decoder, self.record
        stream = self.prepared.stream
        chunk = await self._next(inbox, settings.connect_timeout, "accept the request", keepalive=False)
        if chunk is None:
            raise self._backend_failed(BackendError("closed", "the engine closed the stream at once"))
        record.prompt_tokens = len(self.prepared.prompt_ids)
        if stream:
            await self._start_stream()
        decoding = False
        batch = [chunk, *self._ready(inbox)]
        while True:
            events: list[Event] = []
            for chunk in batch:
                if chunk.prompt_tokens is not None:
                    record.prompt_tokens = chunk.prompt_tokens
                if chunk.cached_tokens is not None:
                    record.cached_tokens = chunk.cached_tokens
                if not decoding and (chunk.token_ids or chunk.text or chunk.finish_reason):
                    # The first output: the engine has reported what it will about the prompt.
                    decoding = True
                    events += decoder.start(prompt_tokens=record.prompt_tokens, cached_tokens=record.cached_tokens)
                if decoding:
                    events += self._feed(chunk)
                    if decoder.finished:
                        break
            await self._emit(events)  # everything that was ready, in one write
            if decoder.finished:
                break
            waiting_for = "send its first token" if record.ttft is None else "send more output"
            timeout = settings.first_token_timeout if record.ttft is None else settings.idle_timeout
            try:
                next_chunk = await self._next(inbox, timeout, waiting_for, keepalive=stream)
                if next_chunk is None:
                    raise self._backend_failed(BackendError("closed", "the engine ended its stream early"))
            except GatewayError as error:
                await self._stream_error(error)
                return
            batch = [next_chunk, *self._ready(inbox)]
        if stream:
            await self._write(decoder.sse_done())
            await self._write(b"", more=False)
        else:
            body = decoder.response().encode()
            self.started = self.complete = True
            await _send_json(self._send, 200, body, [(b"x-request-id", record.request_id.encode())])

    def _feed(self, chunk: BackendChunk) -> list[Event]:
        decoder, record = self.decoder, self.record
        events: list[Event] = []
        if chunk.token_ids or chunk.text:
            now = time.perf_counter()
            if record.ttft is None:
                record.ttft = now - record.started
                self.gateway.metrics.ttft.labels(record.protocol).observe(record.ttft)
            elif record.last_output is not None:
                self.gateway.metrics.itl.observe(now - record.last_output)
            record.last_output = now
        if chunk.token_ids:
            record.completion_tokens += len(chunk.token_ids)
            events += decoder.push_tokens(chunk.token_ids, chunk.logprobs)
        elif chunk.text:
            record.completion_tokens += chunk.token_count
            events += decoder.push_text(chunk.text, chunk.token_count)
        if chunk.finish_reason is not None and not decoder.finished:
            record.finish = chunk.finish_reason
            events += decoder.finish(chunk.finish_reason)
        elif decoder.finished and record.finish is None:
            record.finish = "stop_sequence"
        return events

    def _ready(self, inbox: MemoryObjectReceiveStream[BackendChunk | BackendError]) -> list[BackendChunk]:
        """The chunks already waiting (an error or the end stays for :meth:`_next` to report)."""
        ready: list[BackendChunk] = []
        while self._held is None:
            try:
                item = inbox.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
            if isinstance(item, BackendError):
                self._held = item
            else:
                ready.append(item)
        return ready

    async def _next(
        self, inbox: MemoryObjectReceiveStream[BackendChunk | BackendError], timeout: float, doing: str, *, keepalive: bool
    ) -> BackendChunk | None:
        """The next chunk (``None`` at the end of the engine's stream), within ``timeout``."""
        if self._held is not None:
            raise self._backend_failed(self._held)
        deadline = min(time.perf_counter() + timeout, self.deadline)
        while True:
            wait = deadline - time.perf_counter()
            if keepalive:
                wait = min(wait, self.settings.keepalive_interval)
            item: BackendChunk | BackendError | None = None
            with anyio.move_on_after(max(wait, 0)) as scope:
                try:
                    item = await inbox.receive()
                except anyio.EndOfStream:
                    return None
            if not scope.cancelled_caught:
                if isinstance(item, BackendError):
                    raise self._backend_failed(item)
                return item
            if time.perf_counter() >= deadline:
                raise self._backend_failed(BackendError("timeout", f"the engine did not {doing} in time"))
            await self._write(_KEEPALIVE)

    def _backend_failed(self, error: BackendError) -> GatewayError:
        self.gateway.metrics.backend_errors.labels(error.kind).inc()
        self.record.error = f"backend_{error.kind}"
        kind = {"timeout": "backend_timeout", "connect": "backend_unavailable", "overloaded": "backend_unavailable"}
        return GatewayError(kind.get(error.kind, "backend"), f"Inference backend error: {error}")  # type: ignore[arg-type]

    async def _stream_error(self, error: GatewayError) -> None:
        """End a started stream with the protocol's error event; before that, fail normally."""
        if not self.started:
            raise error
        self.record.status = error.status
        await self._write(error.sse(self.prepared.protocol, self.decoder.events_sent))
        await self._write(b"", more=False)

    async def _start_stream(self) -> None:
        headers = [*_SSE_HEADERS, (b"x-request-id", self.record.request_id.encode())]
        await self._raw_send({"type": "http.response.start", "status": 200, "headers": headers})
        self.started = True

    async def _emit(self, events: list[Event]) -> None:
        if not events:
            return
        if self.prepared.stream:
            await self._write(self.decoder.sse(events))
        else:
            self.decoder.accumulate(events)

    async def _write(self, data: bytes, *, more: bool = True) -> None:
        if self.started:
            self.complete = not more
            await self._raw_send({"type": "http.response.body", "body": data, "more_body": more})

    async def _raw_send(self, message: Message) -> None:
        try:
            await self._send(message)
        except OSError:
            self.record.disconnected = True
            raise _ClientGone from None


def _unauthorized() -> GatewayError:
    return GatewayError("authentication", "Invalid or missing API key")


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


def _request_id(scope: Scope) -> str:
    supplied = _header(scope, b"x-request-id")
    if supplied is not None and 0 < len(supplied) <= 64 and supplied.isascii() and supplied.isalnum():
        return supplied.decode()
    return secrets.token_hex(8)


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_json(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await _send(send, status, body, [(b"content-type", b"application/json"), *(headers or [])])


# -- construction ------------------------------------------------------------------------------


def frontend_from_settings(settings: GatewaySettings) -> Frontend:
    """The :class:`Frontend` that ``settings`` describe (loads the tokenizer)."""
    tokenizer = Tokenizer.from_file(str(settings.tokenizer)) if settings.tokenizer else None
    options = ConversionOptions(default_thinking_mode=settings.default_thinking)
    return Frontend(tokenizer, options=options, context_limit=settings.context_limit)


def backend_from_settings(settings: GatewaySettings, frontend: Frontend) -> Backend:
    """The engine (or pool of replicas) that ``settings`` describe."""
    from deepseek_recipe.backends.completions import CompletionsBackend
    from deepseek_recipe.backends.demo import DemoEngine
    from deepseek_recipe.backends.pool import BackendPool
    from deepseek_recipe.backends.sglang import SGLangBackend

    if settings.backend == "demo":
        return DemoEngine(frontend.tokenizer, token_delay=settings.demo_token_delay)
    if not settings.backend_urls:
        raise ValueError(f"the {settings.backend} backend needs at least one backend URL")
    timeout = settings.connect_timeout
    replicas: list[Backend] = []
    for url in settings.backend_urls:
        if settings.backend == "completions":
            replicas.append(
                CompletionsBackend(
                    url, model=settings.backend_model, token_ids=settings.backend_token_ids, connect_timeout=timeout
                )
            )
        else:
            replicas.append(SGLangBackend(url, connect_timeout=timeout))
    return replicas[0] if len(replicas) == 1 else BackendPool(replicas)


def create_app(settings: GatewaySettings | None = None, **overrides: Any) -> Starlette:
    """A standalone Starlette app serving the gateway (``overrides`` set settings by name)."""
    if settings is None:
        settings = GatewaySettings(**overrides)
    elif overrides:
        settings = settings.model_copy(update=overrides)
    frontend = frontend_from_settings(settings)
    backend = backend_from_settings(settings, frontend)

    async def not_found(request: Request, exc: Exception) -> Response:
        return JSONResponse(orjson.loads(GatewayError("not_found", "Not found").body(None)), status_code=404)

    middleware = [Middleware(Gateway, settings=settings, frontend=frontend, backend=backend, page_at_root=True)]
    return Starlette(middleware=middleware, exception_handlers={404: not_found})


def app_from_env() -> Starlette:
    """The app for ``uvicorn --factory`` worker processes: settings from the environment."""
    return create_app(GatewaySettings())
