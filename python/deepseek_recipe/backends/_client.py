"""The engine connection: HTTP/1.1 on asyncio, responses parsed by ``httptools``, connections
kept alive in a small pool.

Every generation is one request to a local engine, so its fixed cost is part of every
request's time to first byte. Through httpx's transport (httpcore, h11, anyio streams) a small
request's round trip to a local engine took 0.53 ms, against 0.19 ms for a raw asyncio client
(``bench/gateway_bench.py``'s); this client does what that one does, with what an engine
connection needs besides: a pool, a bounded read buffer (reading pauses while the gateway has
not taken the output), TLS for ``https`` engines, and failures as :class:`EngineError`\\ s.

One request per connection at a time; a connection goes back to the pool only after its whole
response was read, and a response left before its end closes its connection (which is how an
engine learns that its client left, and aborts the generation).
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from collections import deque
from typing import Any, cast

import httptools

#: Output buffered from the engine before reading pauses until the gateway takes some.
_HIGH_WATER = 1024 * 1024
#: A request body up to this size is sent joined to its head, in one write: the engine is woken
#: once, not twice (a small request's time to first byte, measured about 0.01 ms less); a larger
#: one is not copied to join them.
_JOIN_BYTES = 64 * 1024


class EngineError(Exception):
    """A failure talking to the engine. ``kind``: ``connect`` (no connection), ``timeout``
    (connecting timed out), ``broken`` (the connection failed or the response was malformed
    after the request was sent). The message names the cause, never the data."""

    def __init__(self, kind: str, cause: str) -> None:
        super().__init__(cause)
        self.kind = kind


class _Connection(asyncio.Protocol):
    """One connection and the response being read on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser: Any = None
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self.status = 0
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.received = False
        self._until_close = True
        self.error: str | None = None

    # -- the request's life ---------------------------------------------------------------------

    def start(self, head: bytes, body: bytes | None) -> None:
        """Send a request (its head and body in one write, or a long body after its head
        rather than copied to join them) and expect its response."""
        assert self.transport is not None
        self._parser = httptools.HttpResponseParser(self)
        self._chunks.clear()
        self._buffered = 0
        self.status, self.headers_done, self.complete, self.received = 0, False, False, False
        self.keep_alive, self._until_close, self.error = False, True, None
        if body and len(body) > _JOIN_BYTES:
            self.transport.write(head)
            self.transport.write(body)
        else:
            self.transport.write(head + body if body else head)

    async def wait(self) -> None:
        """Until something new happened (data, the end, a failure)."""
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def take(self) -> bytes | None:
        """The body bytes read so far (``None`` when none are waiting)."""
        if not self._chunks:
            return None
        data = self._chunks.popleft() if len(self._chunks) == 1 else b"".join(self._chunks)
        self._chunks.clear()
        self._buffered = 0
        if self._paused and self.transport is not None and not self.closed:
            self._paused = False
            self.transport.resume_reading()
        return data

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.closed = True

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.received = True
        if self._parser is None:
            # Bytes nobody asked for (between requests): the connection cannot be trusted.
            self.error = "unexpected data"
            self.abort()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.error = "upgrade"
            self.abort()
        except httptools.HttpParserError as error:
            self.error = type(error).__name__
            self.abort()
        self._wake()

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.headers_done and not self.complete and self._until_close and self.error is None:
            self.complete = True  # a body that ends with the connection
        elif not self.complete and self.error is None:
            self.error = type(exc).__name__ if exc is not None else "RemoteProtocolError"
        self._wake()

    # -- httptools callbacks ------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self._until_close = False

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self._parser.should_keep_alive()
        self._parser = None


class EngineResponse:
    """A response being read: ``status``, then :meth:`chunks`; :meth:`close` when done with it."""

    def __init__(self, client: EngineClient, connection: _Connection) -> None:
        self._client = client
        self._connection = connection
        self.status = connection.status
        self._closed = False

    async def chunks(self) -> Any:
        """The body's bytes as they arrive (``EngineError("broken")`` when it breaks off)."""
        connection = self._connection
        while True:
            data = connection.take()
            if data is not None:
                yield data
                continue
            if connection.complete:
                return
            if connection.error is not None:
                raise EngineError("broken", connection.error)
            await connection.wait()

    def close(self) -> None:
        """Give the connection back when the whole response was read, else close it."""
        if self._closed:
            return
        self._closed = True
        connection = self._connection
        if connection.complete and connection.keep_alive and not connection.closed and connection.take() is None:
            self._client._release(connection)
        else:
            connection.abort()


class EngineClient:
    """Requests to one engine (``url``'s scheme, host and port), on kept-alive connections."""

    def __init__(self, url: str, *, connect_timeout: float, max_idle: int = 64) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("an engine URL is http:// or https:// with a host")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl = ssl.create_default_context() if parts.scheme == "https" else None
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = (parts.scheme == "https" and self.port == 443) or (parts.scheme == "http" and self.port == 80)
        self._host_header = (host if default_port else f"{host}:{self.port}").encode("idna")
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self._idle: list[_Connection] = []

    def head(self, method: str, target: str, headers: list[tuple[bytes, bytes]], length: int | None) -> bytes:
        """A request's head."""
        lines = [f"{method} {target} HTTP/1.1".encode("ascii"), b"host: " + self._host_header]
        lines += [name + b": " + value for name, value in headers]
        if length is not None:
            lines.append(b"content-length: %d" % length)
        return b"\r\n".join(lines) + b"\r\n\r\n"

    async def request(
        self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes | None = None
    ) -> EngineResponse:
        """Send a request; its response once its head arrived."""
        for name, value in headers:
            if b"\r" in name + value or b"\n" in name + value:
                raise ValueError("a header cannot hold a line break")
        head = self.head(method, target, headers, None if body is None else len(body))
        while True:
            connection, reused = self._take_idle(), True
            if connection is None:
                connection, reused = await self._connect(), False
            connection.start(head, body)
            try:
                while not connection.headers_done:
                    if connection.error is not None or connection.complete:
                        raise EngineError("broken", connection.error or "RemoteProtocolError")
                    await connection.wait()
            except EngineError:
                connection.abort()
                if reused and not connection.received:
                    continue  # the engine had closed this idle connection: once more, on a new one
                raise
            except BaseException:
                connection.abort()
                raise
            return EngineResponse(self, connection)

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and connection.transport is not None and not connection.transport.is_closing():
                return connection
        return None

    def _release(self, connection: _Connection) -> None:
        if len(self._idle) < self.max_idle:
            self._idle.append(connection)
        else:
            connection.abort()

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    _Connection, self.host, self.port, ssl=self._ssl, server_hostname=self.host if self._ssl else None
                ),
                self.connect_timeout,
            )
        except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11
            raise EngineError("timeout", "connecting timed out") from None
        except (OSError, ssl.SSLError) as error:
            raise EngineError("connect", type(error).__name__) from None
        return connection

    def close(self) -> None:
        """Close the idle connections (responses being read keep theirs until closed)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.abort()
