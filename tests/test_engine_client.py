"""The engine connection (``backends/_client.py``) against real servers on loopback: bodies in
each framing, connections kept and reused, idle connections the engine closed, reading paused
while output is not taken, a response left early closing its connection, and failures."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

import pytest

from deepseek_recipe.backends._client import _HIGH_WATER, _JOIN_BYTES, EngineClient, EngineError, _Connection

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """An asyncio server on a free loopback port, counting its connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.disconnected = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> Server:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                self.disconnected.set()
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return await reader.readexactly(length)


def answer_with(*responses: bytes, keep: bool = True) -> Handler:
    """A server answering each request with the next of ``responses``."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for response in responses:
            await read_request(reader)
            writer.write(response)
            await writer.drain()
            if not keep:
                return

    return handler


async def read_all(client: EngineClient, body: bytes = b"{}") -> tuple[int, bytes]:
    response = await client.request("POST", "/x", [(b"content-type", b"application/json")], body)
    try:
        return response.status, b"".join([chunk async for chunk in response.chunks()])
    finally:
        response.close()


def run(coroutine: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coroutine, 30))


def test_each_framing_is_read_whole_and_kept_connections_are_reused() -> None:
    chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    sized = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nsized"

    async def main() -> None:
        async with Server(answer_with(chunked, sized, chunked)) as server:
            client = EngineClient(server.url, connect_timeout=5)
            assert await read_all(client) == (200, b"hello world")
            assert await read_all(client) == (200, b"sized")
            assert await read_all(client) == (200, b"hello world")
            assert server.connections == 1
            client.close()

    run(main())


def test_a_small_body_goes_in_one_write_with_its_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """One write wakes the engine once; a long body is written after its head, not copied to
    join it. Either way the engine reads the same request."""
    writes: list[int] = []
    received: list[bytes] = []

    class Counting:
        def __init__(self, transport: Any) -> None:
            self._transport = transport

        def write(self, data: bytes) -> None:
            writes.append(len(data))
            self._transport.write(data)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._transport, name)

    made = _Connection.connection_made
    monkeypatch.setattr(
        _Connection, "connection_made", lambda self, transport: made(self, cast(asyncio.Transport, Counting(transport)))
    )

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(3):
            received.append(await read_request(reader))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()

    small, edge, large = b'{"a": 1}', b"x" * _JOIN_BYTES, b"y" * (_JOIN_BYTES + 1)

    async def main() -> None:
        async with Server(handler) as server:
            client = EngineClient(server.url, connect_timeout=5)
            for body in (small, edge, large):
                assert await read_all(client, body) == (200, b"ok")
            client.close()

    run(main())
    assert received == [small, edge, large]
    # Head and body in one write each, then the long body's head alone and the body alone.
    assert len(writes) == 4 and writes[0] > len(small) and writes[1] > len(edge)
    assert writes[2] < 1024 and writes[3] == len(large)


def test_a_body_that_ends_with_the_connection_and_an_engine_that_closes_idle_connections() -> None:
    until_close = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of it"

    async def main() -> None:
        async with Server(answer_with(until_close, keep=False)) as server:
            client = EngineClient(server.url, connect_timeout=5)
            for _ in range(3):
                assert await read_all(client) == (200, b"all of it")
            assert server.connections == 3
        sized = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
        async with Server(answer_with(sized, keep=False)) as server:
            # Kept-alive by the response, closed by the engine after it: the next request
            # goes on a new connection.
            client = EngineClient(server.url, connect_timeout=5)
            for _ in range(3):
                assert await read_all(client) == (200, b"ok")
                await asyncio.sleep(0.05)
            assert server.connections == 3
            # At once: the close may not be seen yet, and the request goes out on the closed
            # connection; it is sent again on a new one.
            for _ in range(5):
                assert await read_all(client) == (200, b"ok")
            assert server.connections == 8

    run(main())


def test_reading_pauses_while_output_is_not_taken() -> None:
    size = 16 * _HIGH_WATER
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(head)
        for _ in range(size // 65536):
            writer.write(b"x" * 65536)
            await writer.drain()

    async def main() -> None:
        async with Server(handler) as server:
            client = EngineClient(server.url, connect_timeout=5)
            response = await client.request("POST", "/x", [], b"{}")
            chunks = response.chunks()
            total = len(await chunks.__anext__())
            await asyncio.sleep(0.5)  # the engine could send everything meanwhile
            held = response._connection._buffered
            assert held <= 2 * _HIGH_WATER, held
            async for chunk in chunks:
                total += len(chunk)
            response.close()
            assert total == size

    run(main())


def test_a_response_left_early_closes_its_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        while True:  # streams until the client leaves
            writer.write(b"4\r\ndata\r\n")
            await writer.drain()
            await asyncio.sleep(0.01)

    async def main() -> None:
        async with Server(handler) as server:
            client = EngineClient(server.url, connect_timeout=5)
            response = await client.request("POST", "/x", [], b"{}")
            async for _ in response.chunks():
                break
            response.close()
            await asyncio.wait_for(server.disconnected.wait(), 5)
            assert client._take_idle() is None

    run(main())


def test_failures() -> None:
    async def main() -> None:
        async with Server(answer_with(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort", keep=False)) as server:
            client = EngineClient(server.url, connect_timeout=5)
            with pytest.raises(EngineError) as broken:
                await read_all(client)
            assert broken.value.kind == "broken"
        async with Server(answer_with(b"NOT HTTP AT ALL\r\n\r\n")) as server:
            client = EngineClient(server.url, connect_timeout=5)
            with pytest.raises(EngineError) as malformed:
                await read_all(client)
            assert malformed.value.kind == "broken"
        async with Server(answer_with(keep=False)) as server:  # closes before answering
            client = EngineClient(server.url, connect_timeout=5)
            with pytest.raises(EngineError) as closed:
                await read_all(client)
            assert closed.value.kind == "broken"
        url = server.url  # no longer listening
        with pytest.raises(EngineError) as refused:
            await read_all(EngineClient(url, connect_timeout=5))
        assert refused.value.kind == "connect"
        with pytest.raises(ValueError):
            await EngineClient(url, connect_timeout=5).request("GET", "/", [(b"x", b"a\r\nb: c")])

    run(main())


def test_engine_urls() -> None:
    client = EngineClient("http://[::1]:8000/v1", connect_timeout=1)
    assert client.head("GET", "/health", [], None) == b"GET /health HTTP/1.1\r\nhost: [::1]:8000\r\n\r\n"
    assert EngineClient("https://engine.example", connect_timeout=1).port == 443
    with pytest.raises(ValueError):
        EngineClient("ftp://engine", connect_timeout=1)
