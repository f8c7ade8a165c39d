"""Readiness and draining: what ``/ready`` answers and what SIGTERM does.

``/health`` says the process is up. ``/ready`` says it can take work: 200 when the gateway is
not draining and at least one engine replica answers its own health check, else 503.

On SIGTERM (the handler is put in front of the server's own at startup, when the server runs
in the main thread, as ``deepseek-recipe serve`` and uvicorn's workers do):

1. draining begins: ``/ready`` answers 503 at once, and a new generation request gets 503 in
   its protocol's shape with ``retry-after`` (other routes keep working);
2. requests in flight may finish for ``shutdown_grace`` seconds;
3. those still running then end with the protocol's error (503, mid-stream as the protocol's
   error event) and their engine requests are aborted (the stream to the engine is closed);
4. the server's own handler runs: it stops listening and exits, as on any SIGTERM.

A second SIGTERM or SIGINT during the drain ends the grace period at once (step 3 follows).
SIGINT before any SIGTERM is the server's, as ever.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

import anyio

from deepseek_recipe.backends import Backend
from deepseek_recipe.gateway.errors import GatewayError

logger = logging.getLogger("deepseek_recipe.gateway")

ABORT_WAIT = 5.0
"""Seconds the aborted requests get to send their error and close their engine streams."""


class Abortable(Protocol):
    def abort(self, error: GatewayError) -> None: ...


def shutting_down() -> GatewayError:
    """The refusal of new work while draining (and the error of requests aborted at the end)."""
    return GatewayError("shutting_down", "The gateway is shutting down; retry", [(b"retry-after", b"1")])


class InFlight:
    """One generation request in flight; its exchange, once it has one, can be aborted."""

    __slots__ = ("aborted", "exchange")

    def __init__(self) -> None:
        self.exchange: Abortable | None = None
        self.aborted = False

    def attach(self, exchange: Abortable) -> None:
        """The request's exchange with the engine (aborted at once when the drain is over)."""
        self.exchange = exchange
        if self.aborted:
            exchange.abort(shutting_down())

    def abort(self) -> None:
        self.aborted = True
        if self.exchange is not None:
            self.exchange.abort(shutting_down())


class Lifecycle:
    """A gateway's readiness and drain (see the module doc)."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.draining = False
        self._requests: set[InFlight] = set()
        self._cut = False  # a second signal: the grace period is over
        self._forward: Callable[[], None] | None = None

    # -- requests -----------------------------------------------------------------------------

    def enter(self) -> InFlight:
        held = InFlight()
        self._requests.add(held)
        return held

    def leave(self, held: InFlight) -> None:
        self._requests.discard(held)

    @property
    def in_flight(self) -> int:
        return len(self._requests)

    async def ready(self, backend: Backend) -> bool:
        return not self.draining and await backend.healthy()

    # -- the drain ----------------------------------------------------------------------------

    async def drain(self) -> None:
        """Steps 1 to 3 of the module doc."""
        self.draining = True
        logger.warning("draining: %d requests in flight, up to %g s to finish", len(self._requests), self.grace)
        with anyio.move_on_after(self.grace):
            while self._requests and not self._cut:
                await anyio.sleep(0.05)
        if self._requests:
            logger.warning("draining: aborting %d requests still in flight", len(self._requests))
            for held in list(self._requests):
                held.abort()
            with anyio.move_on_after(ABORT_WAIT):
                while self._requests:
                    await anyio.sleep(0.02)

    async def watch_signals(self) -> None:
        """Run for the server's life: on SIGTERM, drain, then hand the signal on. Does nothing
        outside the main thread (signals cannot be handled there)."""
        if threading.current_thread() is not threading.main_thread():
            return
        import asyncio

        loop = asyncio.get_running_loop()
        begin = anyio.Event()
        previous = signal.getsignal(signal.SIGTERM)
        previous_int = signal.getsignal(signal.SIGINT)

        def forward(sig: int, frame: FrameType | None, handler: Any) -> None:
            if callable(handler):
                handler(sig, frame)
            else:  # the default action (or none): as if this handler had never been here
                signal.signal(sig, handler)
                signal.raise_signal(sig)

        def on_signal(sig: int, frame: FrameType | None) -> None:
            if self._forward is None:
                if sig == signal.SIGTERM:
                    self.draining = True  # /ready answers 503 from now on
                    self._forward = lambda: forward(sig, frame, previous)
                    loop.call_soon_threadsafe(begin.set)
                else:  # SIGINT before any SIGTERM: the server's own
                    forward(sig, frame, previous_int)
            else:  # a second signal: no more grace (the drain polls this)
                self._cut = True

        signal.signal(signal.SIGTERM, on_signal)
        if callable(previous_int):
            signal.signal(signal.SIGINT, on_signal)
        try:
            await begin.wait()
            await self.drain()
            if self._forward is not None:
                self._forward()
        finally:
            for sig, handler in ((signal.SIGTERM, previous), (signal.SIGINT, previous_int)):
                if handler is not None:
                    signal.signal(sig, handler)
