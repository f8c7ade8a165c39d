"""Responses run in the background (``background: true``): the request is answered at once and
the response runs on, to be polled (``GET /v1/responses/{id}``), cancelled (``POST
/v1/responses/{id}/cancel``) or, made with ``stream: true``, its events followed again from any
point (``GET /v1/responses/{id}?stream=true&starting_after=N``), as in the official API.

A background response is a stored one (``store`` must be true). Its exchange with the engine
runs as a stream whatever the request asked, into a :class:`Run`: the run keeps its events
(one server-sent event each, numbered as their ``sequence_number``) and the latest response
object they carried. A completed (or incomplete) response is written to the store as any
stored turn, before its last event. The store also keeps a copy of the response object while
it runs, and of one that failed or was cancelled (``StoredResponses.start_run``), so another
process answers for it and can ask for its cancel; each process beats for its running runs
every :data:`HEARTBEAT` seconds and cancels those another asked to. Each process keeps its
runs in memory (:class:`Runs`): running ones until they end, finished ones (for their events)
``background_retention`` seconds; all their events take at most ``background_bytes`` (finished
runs go first, oldest first; a running one that would still go over keeps none).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

from deepseek_recipe.frontend import PreparedRequest, new_response_id
from deepseek_recipe.gateway.asgi import Message, Receive, Send, disconnected
from deepseek_recipe.gateway.errors import GatewayError, public_message
from deepseek_recipe.gateway.exchange import KEEPALIVE, SSE_HEADERS, Exchange

#: Seconds between a process's heartbeats for its running background responses (each one
#: also asks the store whether another process asked for a cancel).
HEARTBEAT = 1.0
#: A running background response whose process has not beaten for this long is reported as
#: failed by the other processes (its process stopped without a word).
STALE_AFTER = 30
#: Statuses after which a response changes no more.
FINISHED = frozenset({"completed", "incomplete", "failed", "cancelled"})
#: Events that carry the whole response object.
_CARRY_RESPONSE = frozenset(
    {b"response.created", b"response.in_progress", b"response.completed", b"response.incomplete", b"response.failed"}
)


class Run:
    """One background response: its status, the response object as it stands, and its events
    (kept when it was made with ``stream: true``)."""

    def __init__(self, response_id: str, owner: str, created: int, queued: dict[str, Any], *, stream: bool) -> None:
        self.id = response_id
        self.owner = owner
        self.created = created
        self.stream = stream
        self.response = queued
        #: Told when the status changes (the store's copy follows: ``stored.py``).
        self.on_change: Callable[[Run], None] | None = None
        #: Serialises the writes of the store's copy (each writes the run as it then stands).
        self.writing = asyncio.Lock()
        #: Told how many bytes the run grew by; answers whether that fits (:class:`Runs`).
        self.resized: Callable[[int], bool] = lambda _: True
        #: Its events outgrew the process's budget: they are not kept (nor followed again).
        self.events_lost = False
        self.frames: list[bytes] = []
        self._frames_bytes = 0
        self._response_bytes = len(orjson.dumps(queued))
        if stream:  # the client learns the response's id at once, as from the official API
            event = {"type": "response.created", "response": queued, "sequence_number": 0}
            self._event(b"event: response.created\ndata: " + orjson.dumps(event) + b"\n\n")
        self.finished_at: float | None = None
        self.exchange: Exchange | None = None
        self.task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    @classmethod
    def of(cls, prepared: PreparedRequest, owner: str) -> Run:
        """A new run of ``prepared`` (a Responses request), queued: its response object is the
        one its ``response.created`` event will carry, ``queued``."""
        response_id, created = new_response_id("responses"), int(time.time())
        decoder = prepared.decoder(response_id, created=created)
        try:
            first = decoder.start(prompt_tokens=len(prepared.prompt_ids) + prepared.image_tokens)[0]
            response: dict[str, Any] = orjson.loads(first.to_json())["response"]
        finally:
            decoder.close()
        return cls(response_id, owner, created, {**response, "status": "queued"}, stream=prepared.stream)

    @property
    def status(self) -> str:
        return str(self.response.get("status"))

    @property
    def size(self) -> int:
        """Bytes the run keeps (about)."""
        return self._frames_bytes + self._response_bytes + 256

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def snapshot(self) -> bytes:
        """The response object as it stands (what ``GET`` answers while the store has none)."""
        return orjson.dumps(self.response)

    # -- what the exchange writes ------------------------------------------------------------

    async def send(self, message: Message) -> None:
        """The exchange's ``send``: its body is split into events and kept."""
        if message["type"] != "http.response.body" or self.finished or self.status == "cancelled":
            return  # (a cancelled run's exchange ends with an error event nobody is to see)
        body: bytes = message.get("body", b"")
        for frame in body.split(b"\n\n"):
            if frame and not frame.startswith(b":"):  # keep-alive comments are not events
                self._event(frame + b"\n\n")
        self._notify()

    async def receive(self) -> Message:
        """The exchange's ``receive``: nobody disconnects from a background response (it is
        cancelled through :meth:`Run.cancel`)."""
        await asyncio.get_running_loop().create_future()  # never done
        raise AssertionError("unreachable")

    def _event(self, frame: bytes) -> None:
        head, _, data = frame.partition(b"\ndata: ")
        name = head.removeprefix(b"event: ")
        if name == b"response.created" and self.frames:
            return  # the exchange's own (number 0, in_progress): the queued one went first
        if name in _CARRY_RESPONSE:
            self._set(orjson.loads(data)["response"])
            self.resized(len(data) - self._response_bytes)
            self._response_bytes = len(data)
        elif name == b"error":
            error = orjson.loads(data)
            self._set_failed(str(error.get("code")), str(error.get("message") or ""))
        if self.stream and not self.events_lost:
            self.frames.append(frame)
            self._frames_bytes += len(frame)
            if not self.resized(len(frame)):  # over the budget: the events go, the run goes on
                self.resized(-self._frames_bytes)
                self.frames, self._frames_bytes, self.events_lost = [], 0, True

    def _set_failed(self, code: str, message: str) -> None:
        # A response's error code is one of the API's few (the gateway's own codes are not).
        code = code if code == "rate_limit_exceeded" else "server_error"
        self._set({**self.response, "status": "failed", "error": {"code": code, "message": message}})

    def _set(self, response: dict[str, Any]) -> None:
        changed = response.get("status") != self.response.get("status")
        self.response = response
        if changed and self.on_change is not None:
            self.on_change(self)

    def cancel(self) -> None:
        """End the run ``cancelled`` (its output so far is not kept); its engine request is
        aborted. Nothing if it is over."""
        if not self.finished and self.status not in FINISHED:
            self._set({**self.response, "status": "cancelled"})
            if self.exchange is not None:
                self.exchange.abort(GatewayError("invalid_request", "The response was cancelled"))

    # -- ending ----------------------------------------------------------------------------

    def fail(self, error: GatewayError) -> None:
        """The run ended with ``error`` before its stream began (or without a word of it)."""
        if not self.finished and self.status not in FINISHED:
            self._set_failed(error.code or "", public_message(error.message))

    def end(self) -> None:
        """The exchange is over: a run that did not reach a final status failed."""
        if self.status not in FINISHED:
            self._set_failed("server_error", "The response ended without completing")
        self.finished_at = time.monotonic()
        self.exchange = None
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- following ---------------------------------------------------------------------------

    async def follow(self, send: Send, receive: Receive, after: int, keepalive: float, headers: list[Any]) -> None:
        """Stream the run's events after sequence number ``after`` to a client (``send``,
        ``receive``), then its new ones as they come (a keep-alive comment every ``keepalive``
        seconds without one), until it ends or the client leaves (the run goes on)."""
        await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *headers]})
        gone = asyncio.ensure_future(disconnected(receive))
        try:
            sent = max(after + 1, 0)
            while not self.events_lost:  # (else the stream ends: the response is to be polled)
                ready = self.frames[sent:]
                if ready:
                    sent += len(ready)
                    await send({"type": "http.response.body", "body": b"".join(ready), "more_body": True})
                if self.finished and sent >= len(self.frames):
                    break
                changed = asyncio.ensure_future(self._changed.wait())
                await asyncio.wait((changed, gone), timeout=keepalive, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                if gone.done():
                    return
                if not changed.done():
                    await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return  # the client is gone; the run is not
        finally:
            gone.cancel()
            if gone.done() and not gone.cancelled():
                gone.exception()  # a receive that failed: the client is gone either way


class Runs:
    """A process's background responses (see the module doc): running ones until they end,
    then, in the order they ended, for ``retention`` seconds. All of them keep at most
    ``budget`` bytes: finished ones go first, oldest first; a running one that would still go
    over keeps no events."""

    def __init__(self, retention: float, budget: int) -> None:
        self.retention = retention
        self.budget = budget
        self._running: dict[str, Run] = {}
        self._finished: OrderedDict[str, Run] = OrderedDict()
        self._bytes = 0

    def add(self, run: Run) -> None:
        self._running[run.id] = run
        run.resized = self._resized
        self._resized(run.size)

    def _resized(self, delta: int) -> bool:
        self._bytes += delta
        while self._bytes > self.budget and self._finished:
            self._forget(next(iter(self._finished)))
        return self._bytes <= self.budget

    def ended(self, run: Run) -> None:
        """``run`` ended: kept as finished (for ``retention`` seconds)."""
        if self._running.pop(run.id, None) is not None:
            self._finished[run.id] = run

    def get(self, response_id: str, owner: str) -> Run | None:
        """The run of ``response_id`` if this process has it and ``owner`` made it."""
        now = time.monotonic()
        while self._finished:  # past their retention, oldest first
            oldest = next(iter(self._finished.values()))
            if oldest.finished_at is not None and now - oldest.finished_at <= self.retention:
                break
            self._forget(oldest.id)
        run = self._running.get(response_id) or self._finished.get(response_id)
        return run if run is not None and run.owner == owner else None

    def drop(self, response_id: str) -> None:
        """Forget a finished run."""
        if response_id in self._finished:
            self._forget(response_id)

    def _forget(self, response_id: str) -> None:
        self._bytes -= self._finished.pop(response_id).size

    def running(self) -> list[Run]:
        return list(self._running.values())

    async def aclose(self) -> None:
        """End what still runs (the server is stopping) and wait for it."""
        tasks = []
        for run in list(self._running.values()):
            if run.exchange is not None:
                run.exchange.abort(GatewayError("shutting_down", "The gateway is shutting down"))
            if run.task is not None:
                tasks.append(run.task)
        if tasks:
            await asyncio.wait(tasks, timeout=5)


__all__ = ["FINISHED", "HEARTBEAT", "STALE_AFTER", "Run", "Runs"]
