"""Running the gateway in production: the settings file, ``/ready`` following the engines'
health, and SIGTERM draining streams in flight (a real ``deepseek-recipe serve`` process in
front of a real fake engine on loopback)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic import ValidationError

import deepseek_recipe as dr
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.backends.pool import BackendPool
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.gateway_support import check_stream, serving, settle
from tests.ops_support import OpsEngine, serve_process
from tests.ports import free_port

MODEL = "DeepSeek-V4-Pro"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_settings_file_under_environment_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _write(
        tmp_path / "gateway.toml",
        'port = 9100\nmax-body-bytes = 1000\ncors_origins = ["https://a.example"]\n'
        '[keys.team-a]\nkey = "sk-a"\nrequests_per_minute = 60\n',
    )
    settings = GatewaySettings(config=config)
    assert settings.port == 9100 and settings.max_body_bytes == 1000 and settings.cors_origins == ["https://a.example"]
    assert settings.keys["team-a"].requests_per_minute == 60 and settings.keys["team-a"].tokens_per_minute is None
    assert settings.accepted_keys() == [b"sk-a"]
    monkeypatch.setenv("DEEPSEEK_RECIPE_PORT", "9200")
    assert GatewaySettings(config=config).port == 9200  # the environment wins over the file
    assert GatewaySettings(config=config, port=9300).port == 9300  # and arguments over both


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prot = 1\n", "unknown settings: prot"),
        ("port = [\n", "not valid TOML"),
        ('[keys.a]\nkey = "k"\nrequests_per_minute = 0\n', "greater than or equal to 1"),
        ('[keys.a]\nkey = "k"\nrpm = 5\n', "Extra inputs are not permitted"),
    ],
)
def test_settings_file_mistakes_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        GatewaySettings(config=_write(tmp_path / "bad.toml", text))


def test_a_missing_settings_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read the settings file"):
        GatewaySettings(config=tmp_path / "absent.toml")


def test_keys_of_the_settings_file_are_accepted(tmp_path: Path, tokenizer: dr.Tokenizer) -> None:
    config = _write(tmp_path / "gateway.toml", 'api_keys = ["sk-plain"]\n[keys.team-a]\nkey = "sk-a"\n')
    gateway = Gateway(settings=GatewaySettings(config=config, log_requests=False), frontend=Frontend(tokenizer))
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    with serving(gateway) as server:
        for key, status in (("sk-plain", 200), ("sk-a", 200), ("sk-other", 401)):
            headers = {"authorization": f"Bearer {key}"}
            assert httpx.post(server.url + "/v1/chat/completions", json=body, headers=headers).status_code == status


def test_ready_follows_the_engines_health(tokenizer: dr.Tokenizer) -> None:
    engine = OpsEngine(tokenizer)
    with serving(engine) as engine_http:
        down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        frontend = Frontend(tokenizer)
        pool = BackendPool([CompletionsBackend(down), CompletionsBackend(engine_http.url)])
        settings = GatewaySettings(log_requests=False, webui=False)
        for backend, replicas_up in ((CompletionsBackend(engine_http.url), 1), (pool, 1)):
            with serving(Gateway(settings=settings, frontend=frontend, backend=backend)) as server:
                engine.healthy = True
                ready = httpx.get(server.url + "/ready")
                assert ready.status_code == 200 and ready.json() == {"status": "ok"}, replicas_up
                engine.healthy = False
                assert httpx.get(server.url + "/ready").status_code == 503
                assert httpx.get(server.url + "/health").status_code == 200  # the process is up
        alone_down = Gateway(settings=settings, frontend=frontend, backend=CompletionsBackend(down))
        with serving(alone_down) as server:
            assert httpx.get(server.url + "/ready").status_code == 503
        with serving(Gateway(settings=settings, frontend=frontend)) as server:  # the demo engine
            assert httpx.get(server.url + "/ready").status_code == 200


# -- SIGTERM -------------------------------------------------------------------------------------

FAST, SLOW = 500, 501  # max_tokens of streams that finish within the grace period, and of those that cannot
GRACE = 4.0


def _body(protocol: str, max_tokens: int) -> tuple[str, dict[str, Any]]:
    messages = [{"role": "user", "content": "Count to forty."}]
    if protocol == "chat":
        return "/v1/chat/completions", {"model": MODEL, "messages": messages, "stream": True, "max_tokens": max_tokens}
    if protocol == "responses":
        body = {"model": MODEL, "input": "Count to forty.", "stream": True, "max_output_tokens": max_tokens}
        return "/v1/responses", {**body, "store": False}
    return "/v1/messages", {"model": MODEL, "messages": messages, "stream": True, "max_tokens": max_tokens}


def _aborted_cleanly(protocol: str, raw: bytes) -> bool:
    """Whether ``raw`` is a stream ended by the gateway's shutdown error in the protocol's
    shape (the events before it each valid)."""
    head, _, last = raw.rstrip(b"\n").rpartition(b"\n\n")
    data = json.loads(last.split(b"data: ", 1)[1])
    if protocol == "chat":
        check_stream("chat", head + b"\n\ndata: [DONE]\n\n")
        return bool(data["error"]["code"] == "service_unavailable")
    if protocol == "responses":
        check_stream("responses", raw)  # the SDK's own ResponseErrorEvent among them
        return bool(data["type"] == "error" and data["code"] == "service_unavailable")
    check_stream("messages", head + b"\n\n")
    return bool(last.startswith(b"event: error\n") and data["error"]["type"] == "overloaded_error")


def test_sigterm_drains_fifty_streams(tokenizer: dr.Tokenizer) -> None:
    words = tokenizer.encode("one " * 40)
    engine = OpsEngine(tokenizer, script=[[i] for i in words], interval=0.05, slow_max_tokens=SLOW, slow_interval=0.5)
    protocols = ["chat", "responses", "messages"]
    plan = [(protocols[i % 3], FAST if i % 2 else SLOW) for i in range(50)]
    results: list[tuple[str, int, int, bytes]] = []
    with serving(engine) as engine_http:
        args = ["--backend", "completions", "--backend-urls", engine_http.url, "--shutdown-grace", str(GRACE)]
        with serve_process(*args, "--store", "none", "--log-requests", "false") as served:

            async def stream(client: httpx.AsyncClient, protocol: str, max_tokens: int) -> None:
                path, body = _body(protocol, max_tokens)
                async with client.stream("POST", served.url + path, json=body) as response:
                    results.append((protocol, max_tokens, response.status_code, await response.aread()))

            async def run() -> tuple[int, int, dict[str, Any], int | None]:
                limits = httpx.Limits(max_connections=100)
                async with httpx.AsyncClient(timeout=60, limits=limits) as client, anyio.create_task_group() as group:
                    for protocol, max_tokens in plan:
                        group.start_soon(stream, client, protocol, max_tokens)
                    with anyio.fail_after(60):
                        while engine.active < len(plan):
                            await anyio.sleep(0.02)
                    served.process.send_signal(signal.SIGTERM)
                    # The first readiness answer after the signal is already 503.
                    ready = (await client.get(served.url + "/ready")).status_code
                    refused = await client.post(served.url + "/v1/messages", json=_body("messages", 8)[1])
                return ready, refused.status_code, refused.json(), _retry_after(refused)

            ready, status, refusal, retry_after = anyio.run(run)
            exit_code = served.process.wait(timeout=GRACE + 30)

    assert ready == 503
    assert (status, retry_after) == (503, 1)
    assert refusal == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "The gateway is shutting down; retry"},
    }
    assert exit_code in (0, -signal.SIGTERM)
    assert len(results) == 50
    completed = aborted = 0
    for protocol, max_tokens, code, raw in results:
        assert code == 200
        if max_tokens == FAST:  # finished within the grace period
            events = check_stream(protocol, raw)
            assert events, protocol
            completed += 1
        else:  # cut at its end, with the protocol's error
            assert _aborted_cleanly(protocol, raw), raw[-300:]
            aborted += 1
    assert (completed, aborted) == (25, 25)
    # The engine saw each stream that could not finish aborted (they would have run 20 s).
    assert settle(lambda: engine.active == 0 and engine.slow_ended == 25)


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("retry-after")
    return None if value is None else int(value)


def test_a_second_signal_stops_at_once(tokenizer: dr.Tokenizer) -> None:
    words = tokenizer.encode("one " * 40)
    engine = OpsEngine(tokenizer, script=[[i] for i in words], interval=0.5)
    with serving(engine) as engine_http:
        args = ["--backend", "completions", "--backend-urls", engine_http.url, "--shutdown-grace", "60"]
        with serve_process(*args, "--store", "none") as served:
            path, body = _body("chat", FAST)
            with httpx.stream("POST", served.url + path, json=body, timeout=60) as response:
                raw = response.iter_raw()  # kept: a dropped iterator closes the response
                next(raw)  # the stream has begun
                served.process.send_signal(signal.SIGTERM)
                assert settle(lambda: httpx.get(served.url + "/ready").status_code == 503)
                started = time.monotonic()
                served.process.send_signal(signal.SIGINT)
                try:
                    served.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pytest.fail("a second signal did not stop the gateway")
            assert time.monotonic() - started < 30
