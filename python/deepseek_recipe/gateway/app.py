"""The gateway: a pure ASGI middleware serving the DeepSeek routes, and an app factory.

Routes (everything else goes to the wrapped app):

=======  ================================  ===============================================
POST     ``/v1/chat/completions``          OpenAI Chat Completions, streamed or not
POST     ``/v1/responses``                 OpenAI Responses, streamed or not
POST     ``/v1/messages``                  Anthropic Messages, streamed or not
POST     ``/v1/messages/count_tokens``     Anthropic token count (the ids the engine gets)
POST     ``/v1/responses/input_tokens``    OpenAI's token count of a Responses request (the
                                           same; a stored conversation it continues included)
GET      ``/v1/models``                    served models (Anthropic's shape when the client
                                           sends ``anthropic-version``, else OpenAI's)
GET      ``/health``                       liveness: the process is up
GET      ``/ready``                        readiness: an engine replica answers, not draining
                                           (``lifecycle.py``)
GET      ``/metrics``                      Prometheus text format
GET      ``/``, ``/webui/…``               the visualizer page and its API (``webui.py``)
…        ``/v1/responses/{id}…``,          stored responses and conversations (``stored.py``)
         ``/v1/conversations…``
=======  ================================  ===============================================

One request: check its ``Host`` (bound to loopback) and, on a JSON route, its content type;
authenticate and read the body under the size and time limits (``intake.py``); count it
against the concurrency limit; encode it: inline on the event loop when the body is at most
``_INLINE_PREPARE_BYTES`` (16 KiB: that takes tens of microseconds, less than a trip to a
thread), else in a worker thread, where a client that leaves cancels it; resolve its images,
if any, always in a thread pool of their own; ask the engine, and turn its output into the
protocol's events as it arrives (``exchange.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
import orjson
from starlette.middleware.cors import CORSMiddleware

from deepseek_recipe._native import (
    CancelToken,
    ConversionOptions,
    ImageResolver,
    MultiModalData,
    OpenCvImagePreprocessor,
    ReqwestImageFetcher,
    Tokenizer,
)
from deepseek_recipe.backends import Backend
from deepseek_recipe.frontend import EncodedRequest, Frontend, Protocol, Stage
from deepseek_recipe.gateway.asgi import (
    ASGIApp,
    ClientGone,
    Message,
    Receive,
    Scope,
    Send,
    disconnected,
    header,
    json_content,
    request_id,
    send_bytes,
    send_json,
)
from deepseek_recipe.gateway.background import Run
from deepseek_recipe.gateway.errors import GatewayError, not_json, send_error
from deepseek_recipe.gateway.exchange import Exchange, Record
from deepseek_recipe.gateway.intake import Intake, unauthorized
from deepseek_recipe.gateway.lifecycle import InFlight, Lifecycle, shutting_down
from deepseek_recipe.gateway.limits import Admission, limits_from_settings
from deepseek_recipe.gateway.metrics import Metrics
from deepseek_recipe.gateway.settings import GatewaySettings
from deepseek_recipe.gateway.stored import StoredResponses
from deepseek_recipe.gateway.tracing import Tracing, tracing_from_settings
from deepseek_recipe.gateway.webui import WebUI
from deepseek_recipe.routing import make_router

logger = logging.getLogger("deepseek_recipe.gateway")
T = TypeVar("T")

_GENERATE: dict[str, Protocol] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
_ROUTES: dict[str, tuple[str, Protocol | None]] = {
    **{path: ("POST", protocol) for path, protocol in _GENERATE.items()},
    "/v1/messages/count_tokens": ("POST", "messages"),
    "/v1/responses/input_tokens": ("POST", "responses"),
    "/v1/models": ("GET", None),
    "/health": ("GET", None),
    "/ready": ("GET", None),
    "/metrics": ("GET", None),
}
# Bodies up to this size are encoded on the event loop: that takes tens of microseconds,
# less than handing the work to a thread and back. Larger ones go to a worker thread. Images
# are never resolved on the loop, whatever the body's size (their downloads take seconds).
_INLINE_PREPARE_BYTES = 16 * 1024
# Threads that encode long bodies (as many as anyio's default for its worker threads).
_ENCODE_THREADS = 40
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


class Gateway:
    """Pure ASGI middleware: serves the DeepSeek routes, passes everything else to ``app``.

    ``Gateway(app, settings)`` wraps any ASGI app; without one (:func:`create_app`) it is a
    standalone app: a 404 for other paths, and the server's lifespan its own. ``frontend``,
    ``backend`` and ``metrics`` default to what ``settings`` describes. The backend is closed
    when the server shuts down (ASGI lifespan). The visualizer page is served at ``/webui/``
    (and ``/`` leads there when ``page_at_root``, by default when there is no app of yours)
    unless ``settings.webui`` is off.
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
        tracing: Tracing | None = None,
    ) -> None:
        self.app = app
        self.settings = settings if settings is not None else GatewaySettings()
        self.frontend = frontend if frontend is not None else frontend_from_settings(self.settings)
        self.backend = backend if backend is not None else backend_from_settings(self.settings, self.frontend)
        self.metrics = metrics if metrics is not None else Metrics()
        self.backend.bind_metrics(self.metrics)
        self.intake = Intake(self.settings, self.frontend)
        self._in_flight = 0
        self._created = int(time.time())
        at_root = app is None if page_at_root is None else page_at_root
        self._webui = WebUI(self.intake, at_root=at_root) if self.settings.webui else None
        # Long bodies are encoded in threads of the gateway's own. Image downloads and decoding
        # get threads of their own too, so hosts that hang cannot take the threads other
        # requests are encoded in.
        self._encode_pool = ThreadPoolExecutor(_ENCODE_THREADS, thread_name_prefix="deepseek-recipe-encode")
        self._image_pool = ThreadPoolExecutor(self.settings.image_workers, thread_name_prefix="deepseek-recipe-images")
        self._hosts = _allowed_hosts(self.settings)
        self._ours: Callable[[Scope, Receive, Send], Any] = self._serve
        if self.settings.cors_origins:
            self._ours = CORSMiddleware(
                self._serve,
                allow_origins=self.settings.cors_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["*"],
                expose_headers=["x-request-id"],
            )
        self.stored = StoredResponses(self.settings, self.frontend)
        self.lifecycle = Lifecycle(self.settings.shutdown_grace)
        self.limits = limits_from_settings(self.settings.keys, self.settings.limits_url)
        self.tracing = tracing if tracing is not None else tracing_from_settings(self.settings.tracing)
        self._stage_metrics: dict[str, Any] = {}

    @property
    def in_flight(self) -> int:
        """Requests being served now."""
        return self._in_flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        path = scope.get("path", "")
        ours = scope["type"] == "http" and (
            path in _ROUTES or self.stored.handles(path) or (self._webui is not None and self._webui.handles(path))
        )
        if ours:
            await self._ours(scope, receive, send)
        elif self.app is not None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await send_json(send, 404, GatewayError("not_found", "Not found").body(None))
        else:  # a WebSocket: none is served here
            await send({"type": "websocket.close", "code": 1000})

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One of our routes (behind the CORS middleware when origins are allowed)."""
        route = _ROUTES.get(scope["path"])
        protocol = route[1] if route is not None else None
        if not self._host_served(scope):
            await send_error(send, GatewayError("invalid_request", "Invalid Host header"), protocol)
            return
        if route is None and self.stored.handles(scope["path"]):
            if scope["method"] == "POST" and self.stored.takes_json(scope["path"]) and not json_content(scope):
                await send_error(send, not_json(), None)
            else:
                await self._stored_route(scope, receive, send)
            return
        webui = self._webui
        if route is None and webui is not None:
            with contextlib.suppress(ClientGone):
                await webui(scope, receive, send)
            return
        if route is None:
            await send_json(send, 404, GatewayError("not_found", "Not found").body(None))
            return
        method, protocol = route
        # HEAD is GET without the body (RFC 9110), for probes and caches.
        head = method == "GET" and scope["method"] == "HEAD"
        if scope["method"] != method and not head:
            error = GatewayError("method_not_allowed", f"Method {scope['method']} is not allowed here")
            await send_error(send, error, protocol, b"GET, HEAD" if method == "GET" else method.encode())
            return
        if method == "POST" and not json_content(scope):
            await send_error(send, not_json(), protocol)
            return
        path = scope["path"]
        if path in _GENERATE:
            await self._generate(_GENERATE[path], scope, receive, send)
        elif path == "/v1/messages/count_tokens":
            await self._count_tokens("messages", scope, receive, send)
        elif path == "/v1/responses/input_tokens":
            await self._count_tokens("responses", scope, receive, send)
        elif path == "/v1/models":
            await self._models(scope, send, head)
        elif path == "/health":
            await send_json(send, 200, b'{"status":"ok"}', head=head)
        elif path == "/ready":
            ready = await self.lifecycle.ready(self.backend)
            answer = b'{"status":"ok"}' if ready else b'{"status":"unavailable"}'
            await send_json(send, 200 if ready else 503, answer, head=head)
        else:
            body = await anyio.to_thread.run_sync(self.metrics.exposition)
            content_type = [(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")]
            await send_bytes(send, 200, body, content_type, head=head)

    async def aclose(self) -> None:
        """End the background responses still running, close the backend's connections and
        the store."""
        await self.stored.runs.aclose()
        await self.backend.aclose()
        await self.stored.close()
        if self.tracing is not None:
            self.tracing.shutdown()
        if self.limits is not None:
            await self.limits.aclose()

    async def _started(self) -> None:
        """Build the output decoder's table of token bytes (once per process, tens of
        milliseconds, else paid by the first request's first token) and open the store (its
        schema created or migrated) as the server starts; a store that cannot be opened now is
        opened at its first use (until then, 503s)."""
        await anyio.to_thread.run_sync(self.frontend.tokenizer.token_bytes, 0)
        try:
            await self.stored.open()
        except Exception as error:
            logger.warning("the response store could not be opened: %s", error)

    # -- lifespan ---------------------------------------------------------------------------

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self.lifecycle.watch_signals)
            if self.limits is not None:
                group.start_soon(self.limits.maintain)
            if self.stored.enabled:
                group.start_soon(self.stored.cleanup_forever)
                group.start_soon(self.stored.watch_runs)
            if self.app is None:
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.startup":
                        await send(await _lifespan_step("startup", self._started))
                    elif message["type"] == "lifespan.shutdown":
                        await send(await _lifespan_step("shutdown", self.aclose))
                        group.cancel_scope.cancel()
                        return

            async def receive_and_close() -> Message:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await self._started()
                elif message["type"] == "lifespan.shutdown":
                    await self.aclose()
                return message

            await self.app(scope, receive_and_close, send)
            group.cancel_scope.cancel()

    # -- routes -----------------------------------------------------------------------------

    async def _models(self, scope: Scope, send: Send, head: bool) -> None:
        anthropic = header(scope, b"anthropic-version") is not None
        if not self.intake.authorized(scope):
            await send_error(send, unauthorized(), "messages" if anthropic else None)
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
        await send_json(send, 200, orjson.dumps(body), head=head)

    async def _count_tokens(self, protocol: Protocol, scope: Scope, receive: Receive, send: Send) -> None:
        """How many input tokens the engine would get for a Messages or Responses request: its
        prompt's ids plus what its images take beyond their placeholders. A Responses request
        that continues a stored response or conversation counts it whole, and may leave out
        ``model`` (the first served model's prompt is counted)."""
        record = Record(protocol, request_id(scope))
        try:
            self.intake.authenticate(scope)
            body = await self.intake.read_body(scope, receive)
            owner = self.intake.owner(scope)
            if protocol == "responses":
                body = await self._run_encode(len(body), receive, lambda: self._with_model(body))
            if protocol == "responses" and self.stored.enabled:
                self.intake.check_depth(body)
                encoded, _ = await self.stored.prepare(
                    owner, body, lambda encode: self._run_encode(len(body), receive, encode)
                )
            else:
                encoded = await self._run_encode(
                    len(body), receive, lambda: self._encode_unstored(protocol, body, owner)
                )
            images = await self._images_async(encoded, receive)
            count = len(encoded.prompt_ids) + (images.image_token_adjustment() if images is not None else 0)
            answer: dict[str, Any] = {"input_tokens": count}
            if protocol == "responses":
                answer = {"object": "response.input_tokens", "input_tokens": count}
            await send_json(send, 200, orjson.dumps(answer))
        except GatewayError as error:
            record.status, record.error = error.status, error.kind
            await send_error(send, error, protocol)
        except ClientGone:
            record.disconnected = True

    def _encode_unstored(
        self, protocol: Protocol, body: bytes, owner: str, stage: Stage | None = None
    ) -> EncodedRequest:
        """Encode a request no store takes part in (no I/O: run as ``_run_encode`` says). A
        Responses request that would need one is refused: this gateway stores nothing."""
        if protocol == "responses":
            self.stored.refuse_state(body)
        return self.intake.encode(protocol, body, stage, owner)

    def _with_model(self, body: bytes) -> bytes:
        """A Responses body to count, with the first served model where it names none (the
        official route takes a request without one)."""
        if b'"model"' in body or not self.frontend.models:
            return body
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return body  # its own error comes from the encoding
        if not isinstance(request, dict) or "model" in request:
            return body
        return orjson.dumps({"model": self.frontend.models[0], **request})

    async def _generate(self, protocol: Protocol, scope: Scope, receive: Receive, send: Send) -> None:
        record = Record(protocol, request_id(scope))
        exchange: Exchange | None = None
        counted = False
        if self.lifecycle.draining:
            record.status, record.error = 503, "shutting_down"
            await send_error(send, shutting_down(), protocol)
            self._finish(record)
            return
        held = self.lifecycle.enter()
        detached = False  # a background response's task took over what the request holds
        admission: Admission | None = None
        if self.tracing is not None:
            self.tracing.start(scope, record)
        try:
            self.intake.authenticate(scope)
            body = await self.intake.read_body(scope, receive)
            record.stage("read_body", record.started, time.perf_counter())
            # A request counts against the limit once its body is in: a client sending its body
            # slowly holds a connection (bounded by the body timeout), not a slot.
            self._in_flight += 1
            self.metrics.running.inc()
            counted = True
            if self._in_flight > self.settings.max_concurrent_requests:
                raise GatewayError("rate_limited", "Too many requests in flight; retry later")
            if self.limits is not None:
                admission = await self.limits.admit(self.intake.key(scope))
            start = time.perf_counter()
            turn = None
            if protocol == "responses" and self.stored.enabled:
                self.intake.check_depth(body)
                encoded, turn = await self.stored.prepare(
                    self.intake.owner(scope), body, lambda encode: self._run_encode(len(body), receive, encode)
                )
            else:
                owner = self.intake.owner(scope)
                encoded = await self._run_encode(
                    len(body), receive, lambda: self._encode_unstored(protocol, body, owner, record.stage)
                )
            if encoded.image_sources:
                started_images = time.perf_counter()
                images = await self._images_async(encoded, receive)
                record.stage("images", started_images, time.perf_counter())
            else:
                images = None
            prepared = self.intake.checked(self.frontend.assemble, encoded, images)
            prepared_at = time.perf_counter()
            record.prepare_seconds = prepared_at - start
            record.stage("prepare", start, prepared_at)
            record.model, record.stream = prepared.model, prepared.stream
            if prepared.images is not None and not self.backend.takes_images:
                raise GatewayError("invalid_request", "The engine behind this gateway does not take images")
            run: Run | None = None
            if turn is not None and turn.background:
                # Answered now; the exchange runs on as a stream into the run (background.py).
                run = Run.of(prepared, turn.owner)
                exchange = Exchange(
                    self.settings,
                    self.backend,
                    self.metrics,
                    dataclasses.replace(prepared, stream=True),
                    record,
                    run.receive,
                    run.send,
                    decoder=prepared.decoder(run.id, created=run.created),
                )
            else:
                exchange = Exchange(self.settings, self.backend, self.metrics, prepared, record, receive, send)
            held.attach(exchange)
            if admission is not None:
                await admission.prompt(len(prepared.prompt_ids) + prepared.image_tokens)
                exchange.headers, exchange.on_tokens = admission.headers(), admission.completion
            if turn is not None:
                stored_turn = turn

                async def commit(response: str) -> None:
                    start = time.perf_counter()
                    await self.stored.commit(stored_turn, response)
                    record.commit_seconds = time.perf_counter() - start

                exchange.on_complete = commit
            if run is not None:
                await self.stored.start_run(run)
                self._run_in_background(run, exchange, held, admission, record)
                detached = True  # the run's task releases what the request holds
                headers = [(b"x-request-id", record.request_id.encode()), *exchange.headers]
                if prepared.stream:
                    await run.follow(send, receive, -1, self.settings.keepalive_interval, headers)
                else:
                    await send_json(send, 200, run.snapshot(), headers)
                return
            await exchange.run()
        except GatewayError as error:
            record.status, record.error = error.status, record.error or error.kind
            if exchange is None or not exchange.started:
                await send_error(send, error, protocol)
        except ClientGone:
            record.disconnected, record.status = True, 499
        except Exception:  # a bug of ours: answer 500 in the protocol's shape, and log it
            logger.exception("request %s failed", record.request_id)
            record.status, record.error = 500, "internal"
            if exchange is None or not exchange.started:
                await send_error(send, GatewayError("internal", "Internal error"), protocol)
        finally:
            if not detached:
                self._release(held, admission, counted, record)

    def _release(self, held: InFlight, admission: Admission | None, counted: bool, record: Record) -> None:
        """What a generation request held, given back as it ends."""
        self.lifecycle.leave(held)
        if admission is not None:
            admission.release()
        if counted:
            self._in_flight -= 1
            self.metrics.running.dec()
        self._finish(record)

    def _run_in_background(
        self, run: Run, exchange: Exchange, held: InFlight, admission: Admission | None, record: Record
    ) -> None:
        """Run a background response's exchange in a task of its own, which ends the run and
        releases what its request held (it counts as in flight until then)."""

        async def background() -> None:
            try:
                await exchange.run()
            except GatewayError as error:
                record.status, record.error = error.status, record.error or error.kind
                run.fail(error)
            except Exception:  # a bug of ours: the run fails, the server stays up
                logger.exception("background response %s failed", run.id)
                record.status, record.error = 500, "internal"
                run.fail(GatewayError("internal", "Internal error"))
            finally:
                run.end()
                self.stored.runs.ended(run)
                self._release(held, admission, True, record)

        run.exchange = exchange
        run.task = asyncio.get_running_loop().create_task(background(), name=f"background {run.id}")

    async def _run_encode(self, size: int, receive: Receive, encode: Callable[[], T]) -> T:
        """``encode()`` (parsing, conversion, rendering, encoding: no I/O) of a body of ``size``
        bytes: inline on the loop up to ``_INLINE_PREPARE_BYTES``, else in a worker thread (a
        client that leaves meanwhile cancels the conversion)."""
        if size <= _INLINE_PREPARE_BYTES:
            return self.intake.checked(encode)
        return await _off_loop(receive, self._encode_pool, self.intake.checked, encode)

    async def _images_async(self, encoded: EncodedRequest, receive: Receive) -> MultiModalData | None:
        """The request's images, resolved in the image pool (never on the loop)."""
        if not encoded.image_sources:
            return None
        return await _off_loop(receive, self._image_pool, self.intake.checked, self.frontend.resolve_images, encoded)

    async def _stored_route(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stored responses and conversations (``stored.py``), in OpenAI's error shape."""
        try:
            self.intake.authenticate(scope)
            await self.stored.serve(
                scope, receive, send, self.intake.owner(scope), lambda: self.intake.read_body(scope, receive)
            )
        except GatewayError as error:
            await send_error(send, error, None)
        except ClientGone:
            pass

    # -- pieces -----------------------------------------------------------------------------

    def _host_served(self, scope: Scope) -> bool:
        """Whether the request's ``Host`` is one this gateway serves: bound to loopback, a page
        on another site whose name now resolves to this machine (DNS rebinding) is not."""
        host = header(scope, b"host")
        return self._hosts is None or host is None or _host_allowed(host, self._hosts)

    def _finish(self, record: Record) -> None:
        m, p = self.metrics, record.protocol
        elapsed = time.perf_counter() - record.started
        m.requests.labels(p, str(record.status)).inc()
        m.e2e.labels(p).observe(elapsed)
        if record.prepare_seconds is not None:
            m.prepare.labels(p).observe(record.prepare_seconds)
        for stage, began, ended in record.stages:
            histogram = self._stage_metrics.get(stage)
            if histogram is None:
                histogram = self._stage_metrics[stage] = m.stage.labels(stage)
            histogram.observe(ended - began)
        if self.tracing is not None:
            self.tracing.finish(record)
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
                "commit_ms": None if record.commit_seconds is None else round(record.commit_seconds * 1e3, 3),
                "ttft_ms": None if record.ttft is None else round(record.ttft * 1e3, 3),
                "duration_ms": round(elapsed * 1e3, 3),
            }
            logger.info(orjson.dumps(line).decode())


async def _off_loop(receive: Receive, pool: Executor, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in a thread of ``pool``, with a :class:`CancelToken` installed: a client
    that leaves meanwhile cancels the token (a conversion stops at its next check) and a call
    still waiting for a thread; a call already running is waited for. Plain asyncio: a hand-off
    to a thread and back costs a fraction of what a task group around ``anyio.to_thread``
    costs, most of all in a process that has been idle."""
    token = CancelToken()

    def work() -> T:
        with token:
            return call(*args)

    job = pool.submit(contextvars.copy_context().run, work)
    running = asyncio.wrap_future(job)
    watch = asyncio.get_running_loop().create_task(disconnected(receive))
    try:
        await asyncio.wait((running, watch), return_when=asyncio.FIRST_COMPLETED)
        if not running.done():  # the client left
            token.cancel()
            if not job.cancel():  # it runs: wait for it (it stops at the token's next check)
                await asyncio.wait((running,))
                if not running.cancelled():
                    running.exception()  # retrieved: what a call cut short raised is not news
            raise ClientGone
        return running.result()
    except asyncio.CancelledError:
        token.cancel()
        if not job.cancel():
            await asyncio.wait((running,))
        raise
    finally:
        watch.cancel()
        if watch.done() and not watch.cancelled():
            watch.exception()  # a receive that failed: the client is gone either way


def _allowed_hosts(settings: GatewaySettings) -> frozenset[str] | None:
    """The host names served (``None``: any): loopback names and ``allowed_hosts`` when the
    gateway listens on a loopback address, else only what ``allowed_hosts`` lists (any when
    it lists nothing)."""
    extra = {h.lower().rstrip(".") for h in settings.allowed_hosts}
    if "*" in extra:
        return None
    if is_loopback(settings.host):
        return frozenset(extra | {"localhost", "127.0.0.1", "::1"})
    return frozenset(extra) if extra else None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, as a bind address or a ``Host`` header's name)
    is this machine's loopback."""
    host = host.strip("[]").lower().rstrip(".")
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_allowed(value: bytes, allowed: frozenset[str]) -> bool:
    """Whether a ``Host`` header (``name``, ``name:port``, ``[v6]:port``) names an allowed host:
    one of ``allowed``, any loopback name or address when ``localhost`` is among them."""
    try:
        text = value.decode("ascii").strip().lower()
    except UnicodeDecodeError:
        return False
    if text.startswith("["):
        name = text[1 : text.find("]")] if "]" in text else ""
    else:
        name = text.rsplit(":", 1)[0] if text.count(":") == 1 else text
    name = name.rstrip(".")
    if not name:
        return False
    return name in allowed or ("localhost" in allowed and is_loopback(name))


# -- construction ------------------------------------------------------------------------------


def frontend_from_settings(settings: GatewaySettings) -> Frontend:
    """The :class:`Frontend` that ``settings`` describe (loads the tokenizer)."""
    tokenizer = Tokenizer.from_file(settings.tokenizer) if settings.tokenizer else None
    options = ConversionOptions(default_thinking_mode=settings.default_thinking, max_choices=settings.max_choices)
    fetcher = ReqwestImageFetcher().with_allowed_networks(settings.image_networks)
    resolver = ImageResolver(fetcher, OpenCvImagePreprocessor()).with_pixel_budget(settings.max_image_pixels)
    return Frontend(tokenizer, options=options, context_limit=settings.context_limit, image_resolver=resolver)


def backend_from_settings(settings: GatewaySettings, frontend: Frontend) -> Backend:
    """The engine (or pool of replicas, routed as ``settings`` say) that ``settings`` describe."""
    from deepseek_recipe.backends.completions import CompletionsBackend
    from deepseek_recipe.backends.demo import DemoEngine
    from deepseek_recipe.backends.pool import BackendPool, head_token
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
        elif settings.backend == "vllm-grpc":
            from deepseek_recipe.backends.vllm_grpc import VllmGrpcBackend  # the grpc extra

            replicas.append(VllmGrpcBackend(url, connect_timeout=timeout))
        elif settings.backend == "sglang-grpc":
            from deepseek_recipe.backends.sglang_grpc import SglangGrpcBackend  # the grpc extra

            replicas.append(SglangGrpcBackend(url, connect_timeout=timeout))
        else:
            replicas.append(SGLangBackend(url, connect_timeout=timeout))
    if len(replicas) == 1:
        return replicas[0]
    router = make_router(
        settings.routing,
        settings.backend_urls,
        load_factor=settings.routing_load_factor,
        memory_blocks=settings.routing_memory_blocks,
    )
    return BackendPool(
        replicas,
        cooldown=settings.replica_cooldown,
        router=router,
        names=settings.backend_urls,
        block_size=settings.block_size,
        head_token=head_token(frontend),
    )


def create_app(settings: GatewaySettings | None = None, **overrides: Any) -> Gateway:
    """The gateway as a standalone ASGI app (``overrides`` set settings by name): its own 404
    for other paths, its own lifespan, the page at ``/``."""
    if settings is None:
        settings = GatewaySettings(**overrides)
    elif overrides:
        settings = settings.model_copy(update=overrides)
    return Gateway(settings=settings)


async def _lifespan_step(step: str, work: Callable[[], Awaitable[None]]) -> Message:
    """The answer to ``lifespan.<step>``: complete, or failed with the error's type (the
    server logs it and, at startup, stops)."""
    try:
        await work()
    except Exception as error:
        logger.exception("the gateway's %s failed", step)
        return {"type": f"lifespan.{step}.failed", "message": type(error).__name__}
    return {"type": f"lifespan.{step}.complete"}


def app_from_env() -> Gateway:
    """The app for ``uvicorn --factory`` worker processes: settings from the environment. The
    process is the gateway's: what it holds once the app is built is frozen for the garbage
    collector (``server.freeze_startup_objects``)."""
    from deepseek_recipe.gateway.server import freeze_startup_objects

    app = create_app(GatewaySettings())
    freeze_startup_objects()
    return app
