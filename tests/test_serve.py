"""``deepseek-recipe serve`` as users run it: flags and environment, worker processes that
share their metrics, and one structured log line per request that holds no prompt text."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

MARKER = "zebra-quartz-7731"  # text that must never reach a log line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@contextmanager
def serve(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, list[str]]]:
    """A running ``deepseek-recipe serve``; yields its URL and (after exit) its stderr lines."""
    port = _free_port()
    command = [sys.executable, "-m", "deepseek_recipe", "serve", "--port", str(port), *args]
    process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
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
        yield f"http://127.0.0.1:{port}", lines
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        lines.extend(err.splitlines())


def chat(url: str, **extra: object) -> httpx.Response:
    body = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": f"Say {MARKER}"}], **extra}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=60)


def test_one_log_line_per_request_and_no_prompt_text() -> None:
    with serve("--api-keys", "k1") as (url, lines):
        assert chat(url).status_code == 401
        ok = httpx.post(
            url + "/v1/chat/completions",
            headers={"authorization": "Bearer k1"},
            json={"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": MARKER}]},
            timeout=60,
        )
        assert ok.status_code == 200 and MARKER in ok.text  # the demo engine quotes it back
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert [r["status"] for r in records] == [401, 200]
    assert records[1]["stream"] is False and records[1]["prompt_tokens"] > 0 and records[1]["ttft_ms"] is not None
    assert not any(MARKER in line for line in lines)


def test_settings_from_the_environment_and_flags_win() -> None:
    env = {"DEEPSEEK_RECIPE_API_KEYS": "from-env", "DEEPSEEK_RECIPE_MAX_BODY_BYTES": "100"}
    with serve("--max-body-bytes", "100000", env=env) as (url, _):
        authorized = {"x-api-key": "from-env"}
        body = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x" * 1000}]}
        assert httpx.post(url + "/v1/chat/completions", json=body, headers=authorized).status_code == 200
        assert httpx.post(url + "/v1/chat/completions", json=body).status_code == 401


def test_workers_share_their_metrics() -> None:
    with serve("--workers", "2", "--log-requests", "false") as (url, _):
        for _ in range(6):
            assert chat(url).status_code == 200
        metrics = httpx.get(url + "/metrics").text
    assert 'deepseek_recipe:requests_total{protocol="chat",status="200"} 6.0' in metrics
