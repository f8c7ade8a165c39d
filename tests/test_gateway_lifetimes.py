"""A finished request's objects are freed when it ends, not at the next garbage collection.

A request that leaves a reference cycle behind (a task and the object that holds it, an
exception whose traceback holds the frame that caught it) keeps its body, prompt ids and
conversation alive until Python's cycle collector runs, which on a long agent conversation is
megabytes per request, and the collector's pass then frees them in the middle of some later
request. These tests run requests with the collector off and look for what is left."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest

import deepseek_recipe as dr
from deepseek_recipe.backends import Backend, BackendChunk, GenerationRequest
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.frontend import EncodedRequest, Frontend, PreparedRequest
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.gateway.asgi import Message
from deepseek_recipe.gateway.exchange import Exchange

PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
SETTINGS = GatewaySettings(store="memory")


def _body(protocol: str, stream: bool, size: int) -> bytes:
    text = "Hello " + "padding " * (size // 8)
    if protocol.startswith("responses"):
        store = protocol == "responses_stored"
        body: dict[str, Any] = {"model": "DeepSeek-V4-Pro", "input": text, "stream": stream, "store": store}
    else:
        body = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": text}], "stream": stream}
        if protocol == "messages":
            body["max_tokens"] = 32
    return json.dumps(body).encode()


def _scope(protocol: str, body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": PATHS[protocol.partition("_")[0]],
        "raw_path": PATHS[protocol.partition("_")[0]].encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _left_behind() -> list[str]:
    """The request objects still alive once the request ended. A worker thread that prepared
    the request drops its reference to the result just after handing it over, which on a busy
    machine can be after the request ended: it is given a few seconds. A cycle never goes
    (the collector is off)."""
    for _ in range(500):
        alive = [
            type(o).__name__ for o in gc.get_objects() if isinstance(o, (Exchange, EncodedRequest, PreparedRequest))
        ]
        if not alive:
            break
        await asyncio.sleep(0.01)
    return alive


def _request_cycles() -> list[str]:
    """What a collection finds in cycles that the gateway's code or anyio made (frames,
    coroutines and tasks of ours, anyio's objects); other threads' garbage (servers of earlier
    tests winding down) is not counted."""

    def ours(o: object) -> bool:
        if isinstance(o, asyncio.Task):
            o = o.get_coro()
        code = getattr(o, "f_code", None) or getattr(o, "cr_code", None)
        if code is not None:
            return "deepseek_recipe" in code.co_filename
        return type(o).__module__.startswith(("deepseek_recipe", "anyio"))

    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return sorted({type(o).__name__ for o in gc.garbage if ours(o)})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def _request(gateway: Gateway, protocol: str, body: bytes, leave_after_output: bool = False) -> list[Message]:
    sent: list[Message] = []
    output = asyncio.Event()
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": body, "more_body": False}
        if leave_after_output:
            await output.wait()
        else:
            await asyncio.Event().wait()  # the client stays until the response is over
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            output.set()

    await gateway(_scope(protocol, body), receive, send)
    return sent


@pytest.mark.parametrize("protocol", ["chat", "messages", "responses", "responses_stored"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("size", [100, 40_000], ids=["inline", "worker_thread"])
def test_a_finished_request_leaves_no_cycles(
    frontend: Frontend, collector_off: None, protocol: str, stream: bool, size: int
) -> None:
    gateway = Gateway(settings=SETTINGS, frontend=frontend, backend=DemoEngine(frontend.tokenizer))
    body = _body(protocol, stream, size)

    async def main() -> None:
        for turn in range(3):
            sent = await _request(gateway, protocol, body)
            assert sent[0]["status"] == 200, sent
            assert await _left_behind() == []
            # Nor any other cycle of the request's code, the worker-thread hand-off's included
            # (the first request may build what the gateway keeps).
            found = _request_cycles()
            assert turn == 0 or found == [], found

    asyncio.run(main())


class _Slow(Backend):
    """An engine that writes one token and then waits until its stream is closed."""

    name = "slow"

    def __init__(self, token: int) -> None:
        self.token = token

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        yield BackendChunk(token_ids=[self.token])
        await asyncio.Event().wait()


@pytest.mark.parametrize("size", [100, 40_000], ids=["inline", "worker_thread"])
def test_a_request_whose_client_leaves_leaves_no_cycles(frontend: Frontend, collector_off: None, size: int) -> None:
    backend = _Slow(frontend.tokenizer.encode(" on")[0])
    gateway = Gateway(settings=SETTINGS, frontend=frontend, backend=backend)
    body = _body("chat", True, size)

    async def main() -> None:
        for _ in range(3):
            sent = await _request(gateway, "chat", body, leave_after_output=True)
            assert sent[0]["status"] == 200, sent
            assert await _left_behind() == []

    asyncio.run(main())


def test_a_gateway_process_freezes_its_startup_objects() -> None:
    """The worker processes' factory (as ``serve``) freezes what exists once the app is built,
    so the collector's full passes skip it (in a process of its own: freezing is global)."""
    script = (
        "import gc; from deepseek_recipe.gateway.app import app_from_env; "
        "before = gc.get_freeze_count(); app_from_env(); print(before, gc.get_freeze_count())"
    )
    env = {**os.environ, "DEEPSEEK_RECIPE_STORE": "memory", "DEEPSEEK_RECIPE_BACKEND": "demo"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    before, after = map(int, out.stdout.split())
    assert before == 0 and after > 10_000, out.stdout
