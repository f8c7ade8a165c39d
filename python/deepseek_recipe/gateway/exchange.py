"""One prepared request against the engine, from its acceptance to the client's last byte.

The engine's output is pumped by a task of its own into a small buffer (:class:`Channel`), so
waiting on it can time out or send keep-alive comments without disturbing it; a second task
watches for the client going away; whichever way the request ends, the engine's stream is
closed, which aborts its request. Chunks that are already waiting are decoded together and
written at once.

The three tasks are plain asyncio tasks, not an anyio task group: on a small request the group
and its cancel scopes took about 15% of the gateway's CPU samples. What the group did is done by
hand: a client that leaves, or :meth:`Exchange.abort`, cancels the pump and the responder (each
once, so the pump's closing of the engine stream runs to its end), the responder takes back its
own cancellation (``Task.uncancel``) and lets any other one through, and the request ends only
once both helper tasks have.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from deepseek_recipe._native import StreamError
from deepseek_recipe.backends import Backend, BackendChunk, BackendError, GenerationRequest
from deepseek_recipe.frontend import Decoder, Event, PreparedRequest, Protocol
from deepseek_recipe.gateway.asgi import ClientGone, Message, Receive, Send, send_json
from deepseek_recipe.gateway.errors import GatewayError
from deepseek_recipe.gateway.metrics import Metrics
from deepseek_recipe.gateway.settings import GatewaySettings

logger = logging.getLogger("deepseek_recipe.gateway")

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
KEEPALIVE = b": keep-alive\n\n"


@dataclass
class Record:
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
    #: A stored response: seconds to store the turn once its output was complete.
    commit_seconds: float | None = None
    ttft: float | None = None
    finish: str | None = None
    error: str | None = None
    disconnected: bool = False
    last_output: float | None = None
    #: ``(stage, start, end)`` in ``time.perf_counter`` seconds: the per-stage histograms and,
    #: when tracing, the request's child spans (``tracing.py``).
    stages: list[tuple[str, float, float]] = field(default_factory=list)
    #: Headers for the engine's request (``traceparent`` when tracing).
    engine_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    #: The request's span and its clock offset when tracing (``tracing.py``).
    span: Any = None
    first_output: float | None = None

    def stage(self, name: str, start: float, end: float) -> None:
        self.stages.append((name, start, end))


class Exchange:
    """One prepared request against the engine: pump, watch, respond (see the module doc)."""

    def __init__(
        self,
        settings: GatewaySettings,
        backend: Backend,
        metrics: Metrics,
        prepared: PreparedRequest,
        record: Record,
        receive: Receive,
        send: Send,
        *,
        decoder: Decoder | None = None,
    ) -> None:
        self.settings, self.backend, self.metrics = settings, backend, metrics
        self.prepared, self.record = prepared, record
        self.receive, self._send = receive, send
        self.decoder: Decoder = decoder if decoder is not None else prepared.decoder()
        self.started = False  # the HTTP response has begun
        self.complete = False  # ... and ended
        self._held: BackendError | None = None  # an engine error seen while draining ready chunks
        self.deadline = record.started + self.settings.total_timeout
        #: Called with the final response's JSON once the output is complete, before its last
        #: bytes go out (a stored response is written then); a ``GatewayError`` it raises
        #: becomes the client's error.
        self.on_complete: Callable[[str], Awaitable[None]] | None = None
        self._final: bytes | None = None
        self._engine_start = 0.0
        # The tasks of run(): the responder (the task run() is called in), the pump, the watcher.
        self._responder: asyncio.Task[Any] | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self._responding = False  # the responder is in _respond (a cancellation may reach it)
        self._responder_cancelled = False  # ... and _cancel() cancelled it
        self._pump_stopping = False  # the pump was cancelled, or is closing the engine's stream
        #: Headers of the response besides its own (the key's rate limits).
        self.headers: list[tuple[bytes, bytes]] = []
        #: Called with the number of output tokens of each chunk as it arrives.
        self.on_tokens: Callable[[int], None] | None = None
        self._aborted: GatewayError | None = None

    def abort(self, error: GatewayError) -> None:
        """End the request now with ``error`` (mid-stream: the protocol's error event); its
        engine request is aborted. Safe to call before :meth:`run`, and more than once."""
        if self._aborted is None and not self.complete:
            self._aborted = error
            if self._responder is not None:
                self._cancel()

    async def run(self) -> None:
        inbox = Channel(16)
        request = GenerationRequest.from_prepared(self.prepared, self.decoder.response_id, self.record)
        self._engine_start = time.perf_counter()
        failure: GatewayError | ClientGone | None = None
        loop = asyncio.get_running_loop()
        responder = self._responder = asyncio.current_task()
        assert responder is not None
        self._pump_task = loop.create_task(self._pump(request, inbox), name="pump")
        self._watch_task = loop.create_task(self._watch(), name="watch")
        external: BaseException | None = None  # a cancellation that is not this request's own
        try:
            self._responding = True
            arrived = False  # the cancellation _cancel() asked for reached the responder
            try:
                if self._aborted is not None:
                    self._cancel()
                await self._respond(inbox)
            except (GatewayError, ClientGone) as error:
                failure = error
            except asyncio.CancelledError as error:
                arrived = self._responder_cancelled
                if not arrived:
                    external = error
            finally:
                self._responding = False
            if self._responder_cancelled:
                if not arrived:
                    try:  # asked for, but the responder did not wait again before it finished
                        await asyncio.sleep(0)
                    except asyncio.CancelledError:
                        pass
                if _take_back_cancel(responder) and external is None:
                    external = asyncio.CancelledError()  # someone else cancelled the request too
        finally:
            self._stop_pump()
            self._watch_task.cancel()
            self.decoder.close()
            inbox.close()
            if self.record.first_output is not None:
                self.record.stage("stream", self.record.first_output, time.perf_counter())
            # The request ends once its helpers have (the pump closing the engine's stream).
            helpers = (self._pump_task, self._watch_task)
            await asyncio.wait(helpers)
            # A finished task keeps its cancellation, whose traceback holds the task's frame and
            # so this exchange: let go of the tasks, or the request lives on until the next
            # garbage collection.
            self._responder = self._pump_task = self._watch_task = None
            for task in helpers:
                if not task.cancelled() and task.exception() is not None:  # a bug of ours: say so
                    logger.error(
                        "request %s: %s failed", self.record.request_id, task.get_name(), exc_info=task.exception()
                    )
        if external is not None:
            raise external
        if self.record.disconnected:
            raise ClientGone
        if failure is None and self._aborted is not None and not self.complete:
            self.record.error = self._aborted.kind
            await self._stream_error(self._aborted)  # raised as it is before the stream began
            return
        if failure is not None:
            raise failure

    async def _pump(self, request: GenerationRequest, outbox: Channel) -> None:
        """The engine's chunks into ``outbox``; its stream is always closed (the pump is
        cancelled at most once, and never while closing it)."""
        generator = self.backend.generate(request)
        try:
            try:
                async for chunk in generator:
                    await outbox.put(chunk)
            except BackendError as error:
                await outbox.put(error)
            except (asyncio.CancelledError, ChannelClosed):
                raise
            except Exception as error:  # a backend bug must not take the server down
                logger.exception("backend %s failed", self.backend.name)
                await outbox.put(BackendError("protocol", f"backend failed: {type(error).__name__}"))
        except ChannelClosed:
            pass
        finally:
            self._pump_stopping = True
            outbox.end()
            await generator.aclose()

    async def _watch(self) -> None:
        """Cancel the request when the client disconnects."""
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                # Servers also report a disconnect once the response is complete.
                self.record.disconnected = not self.complete
                self._cancel()
                return

    def _cancel(self) -> None:
        """Stop the engine's stream and, while it is responding, the responder. asyncio delivers
        a cancellation when the task next resumes, even if what it waited for is already done,
        so an engine stream that ends in the step its client leaves is not taken for a failure."""
        self._stop_pump()
        if self._responding and not self._responder_cancelled and self._responder is not None:
            self._responder_cancelled = True
            self._responder.cancel()

    def _stop_pump(self) -> None:
        if self._pump_task is not None and not self._pump_task.done() and not self._pump_stopping:
            self._pump_stopping = True
            self._pump_task.cancel()

    async def _respond(self, inbox: Channel) -> None:
        settings, decoder, record = self.settings, self.decoder, self.record
        stream = self.prepared.stream
        chunk = await self._next(inbox, settings.connect_timeout, "accept the request", keepalive=False)
        if chunk is None:
            raise self._backend_failed(BackendError("closed", "the engine closed the stream at once"))
        record.prompt_tokens = len(self.prepared.prompt_ids) + self.prepared.image_tokens
        if stream:
            await self._start_stream()
        decoding = False
        batch = [chunk, *self._ready(inbox)]
        while True:
            events: list[Event] = []
            for chunk in batch:
                late = decoding and (chunk.prompt_tokens is not None or chunk.cached_tokens is not None)
                if chunk.prompt_tokens is not None:
                    record.prompt_tokens = chunk.prompt_tokens
                if chunk.cached_tokens is not None:
                    record.cached_tokens = chunk.cached_tokens
                # An engine cannot have cached more of the prompt than the prompt.
                record.cached_tokens = min(record.cached_tokens, record.prompt_tokens)
                if late:  # e.g. vLLM reports its prefix-cache hits with the final usage
                    decoder.update_usage(prompt_tokens=record.prompt_tokens, cached_tokens=record.cached_tokens)
                if not decoding and (chunk.token_ids or chunk.text or chunk.finish_reason):
                    # The first output: the engine has reported what it will about the prompt.
                    decoding = True
                    events += decoder.start(prompt_tokens=record.prompt_tokens, cached_tokens=record.cached_tokens)
                if decoding:
                    try:
                        events += self._feed(chunk)
                    except StreamError:  # an id outside the vocabulary: the engine's output is broken
                        await self._emit(events)
                        failure = BackendError("protocol", "the engine sent a token id outside the vocabulary")
                        await self._stream_error(self._backend_failed(failure))
                        return
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
            if self._final is not None:
                try:
                    await self._complete(self.decoder.final_response or "")
                except GatewayError as error:
                    await self._stream_error(error)
                    return
                await self._write(self._final)
            await self._write(decoder.sse_done())
            await self._write(b"", more=False)
        else:
            body = decoder.response().encode()
            await self._complete(body.decode())
            self.started = self.complete = True
            await send_json(self._send, 200, body, [(b"x-request-id", record.request_id.encode()), *self.headers])

    def _feed(self, chunk: BackendChunk) -> list[Event]:
        decoder, record = self.decoder, self.record
        events: list[Event] = []
        if chunk.token_ids or chunk.text:
            now = time.perf_counter()
            if record.ttft is None:
                record.ttft = now - record.started
                record.first_output = now
                record.stage("engine_ttft", self._engine_start, now)
                self.metrics.ttft.labels(record.protocol).observe(record.ttft)
            elif record.last_output is not None:
                self.metrics.itl.observe(now - record.last_output)
            record.last_output = now
        if chunk.token_ids:
            record.completion_tokens += len(chunk.token_ids)
            events += decoder.push_tokens(chunk.token_ids, chunk.logprobs, chunk.index)
        elif chunk.text:
            record.completion_tokens += chunk.token_count
            events += decoder.push_text(chunk.text, chunk.token_count, chunk.index)
        if self.on_tokens is not None and (chunk.token_ids or chunk.token_count):
            self.on_tokens(len(chunk.token_ids) if chunk.token_ids else chunk.token_count)
        # Every choice stops at max_tokens (the decoder cuts what an engine sends beyond).
        max_tokens = self.prepared.sampling.max_tokens * self.prepared.sampling.n
        if chunk.finish_reason is not None and not decoder.choice_finished(chunk.index):
            record.finish = chunk.finish_reason
            events += decoder.finish(chunk.finish_reason, chunk.index)
        elif decoder.finished and record.finish is None:
            # The decoder ended the output: a stop sequence, or the engine went past max_tokens.
            record.finish = "length" if record.completion_tokens > max_tokens else "stop_sequence"
        record.completion_tokens = min(record.completion_tokens, max_tokens)
        return events

    def _ready(self, inbox: Channel) -> list[BackendChunk]:
        """The chunks already waiting (an error or the end stays for :meth:`_next` to report)."""
        ready: list[BackendChunk] = []
        while self._held is None:
            item = inbox.take()
            if item is None:
                break
            if isinstance(item, BackendError):
                self._held = item
            else:
                ready.append(item)
        return ready

    async def _next(
        self,
        inbox: Channel,
        timeout: float,
        doing: str,
        *,
        keepalive: bool,
    ) -> BackendChunk | None:
        """The next chunk (``None`` at the end of the engine's stream), within ``timeout``."""
        if self._held is not None:
            raise self._backend_failed(self._held)
        deadline = min(time.perf_counter() + timeout, self.deadline)
        while True:
            wait = deadline - time.perf_counter()
            if keepalive:
                wait = min(wait, self.settings.keepalive_interval)
            item = await inbox.get(wait)
            if item is Signal.ENDED:
                return None
            if item is not Signal.TIMED_OUT:
                if isinstance(item, BackendError):
                    raise self._backend_failed(item)
                return item
            if time.perf_counter() >= deadline:
                raise self._backend_failed(BackendError("timeout", f"the engine did not {doing} in time"))
            await self._write(KEEPALIVE)

    def _backend_failed(self, error: BackendError) -> GatewayError:
        """The client's error for an engine failure: the replica's index, never its address
        (the log line has that)."""
        self.metrics.backend_errors.labels(error.kind).inc()
        self.record.error = f"backend_{error.kind}"
        replica = error.replica if error.replica is not None else 0
        logger.warning(
            "request %s: engine %s (replica %d) failed: %s: %s",
            self.record.request_id,
            error.backend or self.backend.name,
            replica,
            error.kind,
            error,
        )
        kind = {"timeout": "backend_timeout", "connect": "backend_unavailable", "overloaded": "backend_unavailable"}
        message = f"Inference backend error (replica {replica}): {error}"
        return GatewayError(kind.get(error.kind, "backend"), message)  # type: ignore[arg-type]

    async def _stream_error(self, error: GatewayError) -> None:
        """End a started stream with the protocol's error event; before that, fail normally."""
        if not self.started:
            raise error
        self.record.status = error.status
        await self._write(error.sse(self.prepared.protocol, self.decoder.events_sent))
        await self._write(b"", more=False)

    async def _start_stream(self) -> None:
        headers = [*SSE_HEADERS, (b"x-request-id", self.record.request_id.encode()), *self.headers]
        await self._raw_send({"type": "http.response.start", "status": 200, "headers": headers})
        self.started = True

    async def _complete(self, final: str) -> None:
        if self.on_complete is not None and final:
            await self.on_complete(final)

    async def _emit(self, events: list[Event]) -> None:
        if not events:
            return
        if self.prepared.stream:
            data = self.decoder.sse(events)
            if self.decoder.finished and self.on_complete is not None:
                self._final = data  # written once the response is stored
                return
            await self._write(data)
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
            raise ClientGone from None


class ChannelClosed(Exception):
    """The receiving side of a :class:`Channel` is gone."""


class Signal(enum.Enum):
    """What :meth:`Channel.get` gives when the sender ended, or when nothing came in time."""

    ENDED = "ended"
    TIMED_OUT = "timed out"


class Channel:
    """The engine's chunks on their way from the pump task to the responding one: at most
    ``size`` waiting (the pump waits beyond), taken with a timeout. A deque and a future, not an
    anyio memory stream and a cancel scope: on a small request those cost tens of
    microseconds before its first byte."""

    def __init__(self, size: int) -> None:
        self._items: deque[BackendChunk | BackendError] = deque()
        self._size = size
        self._ended = False
        self._closed = False
        self._getter: asyncio.Future[None] | None = None
        self._putter: asyncio.Future[None] | None = None

    async def put(self, item: BackendChunk | BackendError) -> None:
        """Add ``item``, once there is room (``ChannelClosed`` when the receiver is gone)."""
        while len(self._items) >= self._size and not self._closed:
            self._putter = asyncio.get_running_loop().create_future()
            try:
                await self._putter
            finally:
                self._putter = None
        if self._closed:
            raise ChannelClosed
        self._items.append(item)
        _wake(self._getter)

    def end(self) -> None:
        """The sender is done: the receiver gets ``ENDED`` after what is waiting."""
        self._ended = True
        _wake(self._getter)

    def close(self) -> None:
        """The receiver is gone: a sender waiting for room, and any later ``put``, fails."""
        self._closed = True
        self._items.clear()
        _wake(self._putter)

    def take(self) -> BackendChunk | BackendError | None:
        """The next item if one is waiting."""
        if not self._items:
            return None
        item = self._items.popleft()
        _wake(self._putter)
        return item

    async def get(self, timeout: float) -> BackendChunk | BackendError | Signal:
        """The next item; ``ENDED`` after the last; ``TIMED_OUT`` after ``timeout`` seconds
        without one."""
        item = self.take()
        if item is not None:
            return item
        if self._ended:
            return Signal.ENDED
        if timeout <= 0:
            return Signal.TIMED_OUT
        loop = asyncio.get_running_loop()
        self._getter = loop.create_future()
        timer = loop.call_later(timeout, _wake, self._getter)
        try:
            await self._getter
        finally:
            timer.cancel()
            self._getter = None
        item = self.take()
        if item is not None:
            return item
        return Signal.ENDED if self._ended else Signal.TIMED_OUT


def _take_back_cancel(task: asyncio.Task[Any]) -> bool:
    """Take back one cancellation of ``task`` that the request made itself; whether another is
    still pending. Python 3.10 does not count cancellations: there every one that reaches the
    responder after the request cancelled it is taken for the request's own."""
    uncancel = getattr(task, "uncancel", None)
    return uncancel is not None and uncancel() > 0


def _wake(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)
