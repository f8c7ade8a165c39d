"""Helpers for the gateway tests: real servers on loopback, SSE parsing, and checks of every
event against the official SDKs' own types."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
import uvicorn
from anthropic.types import Message, RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

import deepseek_recipe as dr
from deepseek_recipe.backends import BackendChunk, GenerationRequest
from deepseek_recipe.backends.demo import DemoEngine

T = TypeVar("T")


_CLIENTS: list[Any] = []


def closed_after_test(client: T) -> T:
    """``client`` (an SDK or httpx client), closed when the test that made it ends
    (``tests/conftest.py``): one left open keeps its sockets until the collector finds them,
    in whichever later test that is, whose warnings are errors."""
    _CLIENTS.append(client)
    return client


def close_clients() -> None:
    while _CLIENTS:
        _CLIENTS.pop().close()


class RecordingDemo(DemoEngine):
    """The demo engine, keeping the prompt ids of every request it gets."""

    def __init__(self, tokenizer: dr.Tokenizer) -> None:
        super().__init__(tokenizer)
        self.prompts: list[list[int]] = []

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        self.prompts.append(list(request.prompt_ids))
        async for chunk in super().generate(request):
            yield chunk


_EVENTS: dict[str, TypeAdapter[Any]] = {
    "chat": TypeAdapter(ChatCompletionChunk),
    "responses": TypeAdapter(ResponseStreamEvent),
    "messages": TypeAdapter(RawMessageStreamEvent),
}
_RESPONSES: dict[str, TypeAdapter[Any]] = {
    "chat": TypeAdapter(ChatCompletion),
    "responses": TypeAdapter(Response),
    "messages": TypeAdapter(Message),
}


class ServerThread:
    """A uvicorn server for ``app`` on a free loopback port, in a thread of its own (``options``:
    more ``uvicorn.Config`` settings, such as the gateway's own ``uvicorn_options``)."""

    def __init__(self, app: Any, **options: Any) -> None:
        self.app = app
        # Keep-alive longer than any test's pause, so a client never races the server closing an
        # idle connection it is about to reuse.
        settings: dict[str, Any] = {"timeout_keep_alive": 75, **options}
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", **settings)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        self.loop = self.server.servers[0].get_loop()
        return self

    @property
    def port(self) -> int:
        port: int = self.server.servers[0].sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(self, function: Callable[[], Awaitable[T]]) -> T:
        """Run ``function()`` on the server's loop and return its result."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(_call(function), self.loop).result(timeout=30)

    def tasks(self) -> int:
        """Tasks alive on the server's loop (the caller's probe excluded)."""

        async def count() -> int:
            return len(asyncio.all_tasks()) - 1

        return self.call(count)

    def connections(self) -> int:
        """Client connections the server holds open."""
        return len(self.server.server_state.connections)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


async def _call(function: Callable[[], Awaitable[T]]) -> T:
    return await function()


@contextmanager
def serving(app: Any, **options: Any) -> Iterator[ServerThread]:
    server = ServerThread(app, **options).start()
    try:
        yield server
    finally:
        server.stop()


def settle(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Wait until ``check()`` holds (for counts that drop once a server has cleaned up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def leave_a_stream(url: str, model: str, lines: int = 20) -> None:
    """Start a streamed Chat request (to an engine that never finishes), read ``lines`` lines of
    it, at least one an event, and go away."""
    body = {"model": model, "messages": [{"role": "user", "content": "go on forever"}], "stream": True}
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=30) as response:
        received = response.iter_lines()
        assert any(next(received).startswith("data: ") for _ in range(lines))


def chat_stream_choice(events: list[dict[str, Any]], index: int) -> tuple[str, list[dict[str, Any]]]:
    """A streamed Chat choice's content and its log probability entries, from its chunks."""
    choices = [c for e in events for c in e["choices"] if c["index"] == index]
    content = "".join(c["delta"].get("content") or "" for c in choices)
    return content, [lp for c in choices for lp in (c.get("logprobs") or {}).get("content") or []]


def parse_sse(raw: bytes) -> list[tuple[str | None, str]]:
    """``(event name, data)`` for every event of a server-sent event stream (comments skipped)."""
    events: list[tuple[str | None, str]] = []
    for block in raw.decode().split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            events.append((name, "\n".join(data)))
    return events


def check_stream(protocol: str, raw: bytes) -> list[dict[str, Any]]:
    """Every event of a complete stream, each checked against the SDK's event type.

    Chat must end with ``[DONE]``; Responses and Messages events must carry their type as the
    SSE event name. Anthropic ``ping`` events (which the SDK skips) are checked by shape.
    Returns the decoded events (``[DONE]`` excluded).
    """
    events = parse_sse(raw)
    out: list[dict[str, Any]] = []
    if protocol == "chat":
        assert events and events[-1] == (None, "[DONE]"), "a Chat stream ends with [DONE]"
        events = events[:-1]
    for name, data in events:
        value = json.loads(data)
        assert isinstance(value, dict)
        if protocol != "chat":
            assert name == value["type"], f"event name {name!r} is not the type {value['type']!r}"
        if protocol == "messages" and value["type"] == "ping":
            assert value == {"type": "ping"}
        else:
            _EVENTS[protocol].validate_python(value)
        out.append(value)
    if protocol == "responses":
        assert [e["sequence_number"] for e in out] == list(range(len(out)))
    return out


def check_response(protocol: str, body: bytes) -> dict[str, Any]:
    """A non-streamed response, checked against the SDK's response type."""
    value = json.loads(body)
    _RESPONSES[protocol].validate_python(value)
    assert isinstance(value, dict)
    return value
