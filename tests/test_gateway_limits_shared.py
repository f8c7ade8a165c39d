"""Per-key limits shared through a real Redis server (Debian's ``redis-server``, started by the
test): two ``deepseek-recipe serve`` processes share one budget, and a Redis restart degrades
to per-process limits with a warning, never to failed requests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import redis

from tests.ops_support import serve_process
from tests.redis_support import RedisServer, redis_server

MODEL = "DeepSeek-V4-Pro"


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with redis_server() as running:
        yield running


def _config(tmp_path: Path, url: str, keys: str) -> str:
    path = tmp_path / "gateway.toml"
    path.write_text(f'limits_url = "{url}"\nstore = "none"\ndemo_token_delay = 0.1\n{keys}', encoding="utf-8")
    return str(path)


def _ask(url: str, key: str) -> int:
    """One chat request with ``key``: 200, or 429 as the SDK raises it."""
    with openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0) as client:  # its connection closed
        try:
            client.chat.completions.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
        except openai.RateLimitError as error:
            assert error.code == "rate_limit_exceeded"
            return 429
    return 200


def test_two_gateways_share_one_budget(tmp_path: Path, server: RedisServer) -> None:
    keys = (
        '[keys.shared]\nkey = "sk-shared"\nrequests_per_minute = 4\n'
        '[keys.other]\nkey = "sk-other"\nrequests_per_minute = 4\n'
        '[keys.single]\nkey = "sk-single"\nconcurrent_requests = 1\n'
    )
    config = _config(tmp_path, server.url, keys)
    with serve_process("--config", config) as a, serve_process("--config", config) as b:
        assert [_ask(gateway.url, "sk-shared") for gateway in (a, b, a, b)] == [200, 200, 200, 200]
        # Four in a minute between them: each process alone would have allowed four.
        assert [_ask(a.url, "sk-shared"), _ask(b.url, "sk-shared")] == [429, 429]
        assert _ask(b.url, "sk-other") == 200  # another key's budget is its own
        # One request at once, wherever it is: a stream held open on A takes B's slot too.
        body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "Tell a long story."}]}
        headers = {"authorization": "Bearer sk-single"}
        with httpx.stream("POST", a.url + "/v1/chat/completions", json=body, headers=headers, timeout=60) as held:
            lines = held.iter_lines()  # kept: a dropped iterator closes the response
            assert held.status_code == 200 and next(lines).startswith("data: ")
            assert _ask(b.url, "sk-single") == 429
        deadline = time.monotonic() + 10
        while _ask(b.url, "sk-single") != 200:  # the slot is free once the stream has ended
            assert time.monotonic() < deadline, "the slot was never released"
            time.sleep(0.1)
    client = redis.Redis.from_url(server.url)
    try:
        stored = [key if isinstance(key, str) else key.decode() for key in client.keys("*")]
    finally:
        client.connection_pool.disconnect()
    assert any(key.startswith("deepseek-recipe:limits:{shared}:") for key in stored)
    assert not any("sk-" in key for key in stored)  # keys are named, never stored


def test_a_redis_restart_degrades_to_per_process_limits(tmp_path: Path, server: RedisServer) -> None:
    config = _config(tmp_path, server.url, '[keys.k]\nkey = "sk-k"\nrequests_per_minute = 3\n')
    with serve_process("--config", config) as gateway:
        assert _ask(gateway.url, "sk-k") == 200  # counted in Redis
        server.stop()
        # Redis is gone: the process counts alone (its own budget of three), and serves.
        assert [_ask(gateway.url, "sk-k") for _ in range(4)] == [200, 200, 200, 429]
        server.start()  # a fresh Redis, on the same port
        time.sleep(1.5)  # past the pause before Redis is tried again
        assert _ask(gateway.url, "sk-k") == 200  # its budget there is whole again
        assert _ask(gateway.url, "sk-k") == 200
    assert any("Redis cannot be reached" in line and "counting in this process" in line for line in gateway.log)
    assert any("Redis answers again" in line for line in gateway.log)
