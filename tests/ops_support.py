"""Helpers for the operations tests (readiness, draining, limits): a fake engine with a health
check and streams of two speeds, and ``deepseek-recipe serve`` run as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from tests.fake_engines import FakeEngine, Receive, Scope, Send
from tests.ports import free_port


@dataclass
class OpsEngine(FakeEngine):
    """A completions engine answering ``GET /health`` (``healthy`` decides 200 or 503); requests
    asking for ``slow_max_tokens`` tokens stream with ``slow_interval`` between chunks."""

    healthy: bool = True
    slow_max_tokens: int | None = None
    slow_interval: float = 0.0
    health_checks: int = 0
    slow_ended: int = 0
    #: The W3C trace context headers of each generation request, in arrival order.
    trace_headers: list[dict[str, str]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/health":
            self.health_checks += 1
            status = 200 if self.healthy else 503
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["type"] == "http":
            seen = {k.decode(): v.decode() for k, v in scope["headers"] if k in (b"traceparent", b"tracestate")}
            self.trace_headers.append(seen)
        await super().__call__(scope, receive, send)

    async def _stream(self, request: dict[str, Any], send: Send, gone: anyio.Event) -> None:
        if self.slow_max_tokens is None or request.get("max_tokens") != self.slow_max_tokens:
            await super()._stream(request, send, gone)
            return
        # The same stream at another pace: a copy of this engine streams it (the counts of
        # finished and aborted requests stay this engine's: they are kept around _stream).
        slow = FakeEngine(self.tokenizer, self.kind, self.script, self.finish, interval=self.slow_interval)
        try:
            await FakeEngine._stream(slow, request, send, gone)
        finally:
            self.slow_ended += 1


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]
    #: The process's stderr lines, once it has exited.
    log: list[str] = field(default_factory=list)


@contextmanager
def serve_process(*args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``deepseek-recipe serve`` in a process of its own, once ``/health`` answers; stopped (by
    SIGKILL if it has not exited) afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "deepseek_recipe", "serve", "--port", str(port), *args]
    process = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        served = Served(f"http://127.0.0.1:{port}", process)
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=30)  # its pipe read and closed, whenever it exited
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        if "served" in locals():
            served.log.extend(err.splitlines())
