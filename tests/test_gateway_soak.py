"""A bounded soak: hundreds of concurrent streaming clients against the demo engine, some
going away mid-stream. Every stream that completes is whole and protocol-correct, the
gateway's in-flight count returns to zero, and memory returns to its baseline.

``max_concurrent_requests`` is exactly the number of clients, and holds by construction: a
client starts its next request only once the gateway has finished its previous one (a request
whose client went away, or whose last bytes the client has read, may still be winding down on
the server; ``Finished`` tells the clients when it is done)."""

from __future__ import annotations

import asyncio
import gc
import random
import resource
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.gateway_support import ServerThread, check_stream, serving, settle

MODEL = "DeepSeek-V4-Pro"
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
TERMINAL = {"responses": "response.completed", "messages": "message_stop"}
CLIENTS = 300
REQUESTS = 450


def body_for(protocol: str, n: int) -> dict[str, Any]:
    text = f"Soak request {n}: {'tell me more ' * (n % 7)}"
    if protocol == "responses":
        return {"model": MODEL, "input": text, "stream": True}
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": text}], "stream": True}
    if protocol == "messages":
        body["max_tokens"] = 512
    return body


class Finished:
    """ASGI middleware that records the request ids (``x-request-id``) whose handling by the
    app has returned, so a client can wait for the server to be done with its last request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.done: set[str] = set()
        self.lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            name = dict(scope.get("headers") or []).get(b"x-request-id")
            if name is not None:
                with self.lock:
                    self.done.add(name.decode())

    async def wait(self, request_id: str) -> None:
        while True:
            with self.lock:
                if request_id in self.done:
                    self.done.discard(request_id)
                    return
            await asyncio.sleep(0.005)


@pytest.fixture(scope="module")
def soak_server(tokenizer: dr.Tokenizer) -> Iterator[tuple[Gateway, Finished, ServerThread]]:
    frontend = Frontend(tokenizer)
    settings = GatewaySettings(log_requests=False, max_concurrent_requests=CLIENTS)
    gateway = Gateway(settings=settings, frontend=frontend, backend=DemoEngine(tokenizer, token_delay=0.002))
    finished = Finished(gateway)
    with serving(finished) as server:
        yield gateway, finished, server


async def _round(url: str, seed: int, finished: Finished) -> tuple[int, int]:
    """Run the soak once; returns (completed streams, abandoned streams)."""
    rng = random.Random(seed)
    jobs = [(rng.choice(sorted(PATHS)), n, rng.random() < 0.2) for n in range(REQUESTS)]
    queue: asyncio.Queue[tuple[str, int, bool]] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    done = abandoned = 0
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:

        async def worker() -> None:
            nonlocal done, abandoned
            while not queue.empty():
                protocol, n, leave = queue.get_nowait()
                request_id = f"soak{seed}x{n}"
                headers = {"x-request-id": request_id}
                try:
                    async with client.stream(
                        "POST", PATHS[protocol], json=body_for(protocol, n), headers=headers
                    ) as response:
                        assert response.status_code == 200
                        if leave:
                            async for _ in response.aiter_bytes():
                                break  # go away mid-stream
                            abandoned += 1
                            continue
                        raw = await response.aread()
                finally:
                    await finished.wait(request_id)  # the server is done with it: one slot per client
                events = check_stream(protocol, raw)
                if protocol in TERMINAL:
                    assert events[-1]["type"] == TERMINAL[protocol]
                else:
                    assert events[-1]["choices"][0]["finish_reason"] == "stop" or events[-1]["usage"]
                done += 1

        await asyncio.gather(*(worker() for _ in range(CLIENTS)))
    return done, abandoned


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() // 1024


@pytest.mark.slow
def test_soak_many_streaming_clients(soak_server: tuple[Gateway, Finished, ServerThread]) -> None:
    gateway, finished, server = soak_server
    asyncio.run(_round(server.url, 1, finished))  # warm-up: caches, pools and arenas reach their size
    assert settle(lambda: gateway.in_flight == 0, timeout=30)
    gc.collect()
    baseline = _rss_kib()
    tasks = server.tasks()
    for seed in (2, 3):
        done, abandoned = asyncio.run(_round(server.url, seed, finished))
        assert done + abandoned == REQUESTS and abandoned > REQUESTS // 10
        assert settle(lambda: gateway.in_flight == 0, timeout=30)
    assert settle(lambda: server.tasks() <= tasks, timeout=30)
    gc.collect()
    grown = _rss_kib() - baseline
    assert grown < 64 * 1024, f"resident memory grew by {grown} KiB over two rounds"
    metrics = httpx.get(server.url + "/metrics").text
    assert "deepseek_recipe:num_requests_running 0.0" in metrics
