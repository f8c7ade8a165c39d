"""``deepseek-recipe serve`` as users run it: flags and environment, worker processes that
share their metrics, and one structured log line per request that holds no prompt text."""

from __future__ import annotations

import json

import httpx

from tests.ops_support import serve_process

MARKER = "zebra-quartz-7731"  # text that must never reach a log line


def chat(url: str, **extra: object) -> httpx.Response:
    body = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": f"Say {MARKER}"}], **extra}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=60)


def test_one_log_line_per_request_and_no_prompt_text() -> None:
    with serve_process("--api-keys", "k1") as served:
        url = served.url
        assert chat(url).status_code == 401
        ok = httpx.post(
            url + "/v1/chat/completions",
            headers={"authorization": "Bearer k1"},
            json={"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": MARKER}]},
            timeout=60,
        )
        assert ok.status_code == 200 and MARKER in ok.text  # the demo engine quotes it back
    lines = served.log
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert [r["status"] for r in records] == [401, 200]
    assert records[1]["stream"] is False and records[1]["prompt_tokens"] > 0 and records[1]["ttft_ms"] is not None
    assert not any(MARKER in line for line in lines)


def test_settings_from_the_environment_and_flags_win() -> None:
    env = {"DEEPSEEK_RECIPE_API_KEYS": "from-env", "DEEPSEEK_RECIPE_MAX_BODY_BYTES": "100"}
    with serve_process("--max-body-bytes", "100000", env=env) as served:
        url = served.url
        authorized = {"x-api-key": "from-env"}
        body = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x" * 1000}]}
        assert httpx.post(url + "/v1/chat/completions", json=body, headers=authorized).status_code == 200
        assert httpx.post(url + "/v1/chat/completions", json=body).status_code == 401


def test_workers_share_their_metrics() -> None:
    with serve_process("--workers", "2", "--log-requests", "false") as served:
        url = served.url
        for _ in range(6):
            assert chat(url).status_code == 200
        metrics = httpx.get(url + "/metrics").text
    assert 'deepseek_recipe:requests_total{protocol="chat",status="200"} 6.0' in metrics
