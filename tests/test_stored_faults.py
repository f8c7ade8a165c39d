"""Stored responses when things go wrong: a gateway killed in the middle of a turn, a
PostgreSQL restart, a read-only or full SQLite database, and two gateway processes sharing one
PostgreSQL. Stores and servers are real (SQLite files, a PostgreSQL the tests start, gateway
processes on loopback)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.gateway.store.sql import SqliteStore
from tests import postgres_support
from tests.gateway_support import closed_after_test, parse_sse, serving
from tests.ports import free_port

MODEL = "DeepSeek-V4-Pro"


@contextmanager
def gateway_process(store: str, *extra: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    command = [sys.executable, "-m", "deepseek_recipe", "serve", "--port", str(port), "--store", store]
    command += ["--log-requests", "false", "--webui", "false", *extra]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, "the gateway exited"
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.1)
        yield process, url
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def client(url: str) -> openai.OpenAI:
    return closed_after_test(openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0))


def test_a_gateway_killed_mid_turn_loses_no_stored_turn(tmp_path: Path) -> None:
    database = tmp_path / "store.sqlite3"
    store = f"sqlite://{database}"
    with gateway_process(store, "--demo-token-delay", "0.02") as (process, url):
        first = client(url).responses.create(model=MODEL, input="Tell me a long story")
        assert first.status == "completed"
        body = {"model": MODEL, "input": "and then?", "previous_response_id": first.id, "stream": True}
        with httpx.stream("POST", url + "/v1/responses", json=body, timeout=30) as response:
            lines = response.iter_lines()
            created: dict[str, Any] | None = None
            for line in lines:
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    if event["type"] == "response.output_text.delta" or event["type"].endswith(".delta"):
                        break
                    if event["type"] == "response.created":
                        created = event["response"]
            assert created is not None
            os.kill(process.pid, signal.SIGKILL)  # in the middle of the turn
            process.wait()
    # Nothing half-written: the file is consistent and holds exactly the first turn.
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert [row[0] for row in connection.execute("SELECT id FROM responses")] == [first.id]
    with gateway_process(store) as (_, url):
        oai = client(url)
        assert oai.responses.retrieve(first.id).output_text == first.output_text
        with pytest.raises(openai.NotFoundError):
            oai.responses.retrieve(created["id"])
        follow = oai.responses.create(model=MODEL, input="and then?", previous_response_id=first.id)
        assert follow.status == "completed"


@pytest.fixture
def own_postgres() -> Iterator[postgres_support.Postgres]:
    """A server of this test's own (it is stopped and started mid-test)."""
    with postgres_support.started() as server:
        yield server


def test_a_postgres_restart_gives_503s_then_the_run_recovers(
    own_postgres: postgres_support.Postgres, tokenizer: Any
) -> None:
    settings = GatewaySettings(log_requests=False, store=own_postgres.url(), store_pool_size=2)
    gateway = Gateway(settings=settings, frontend=Frontend(tokenizer))
    with serving(gateway) as server:
        oai = client(server.url)
        first = oai.responses.create(model=MODEL, input="hello")
        own_postgres.stop()
        for body in (
            {"model": MODEL, "input": "more", "previous_response_id": first.id},
            {"model": MODEL, "input": "a new one"},
        ):
            failed = httpx.post(server.url + "/v1/responses", json=body, timeout=30)
            assert failed.status_code == 503, failed.text
            assert failed.json()["error"]["code"] == "store_unavailable"
            assert failed.json()["error"]["type"] == "server_error"
        got = httpx.get(server.url + f"/v1/responses/{first.id}", timeout=30)
        assert got.status_code == 503
        own_postgres.start()
        deadline = time.monotonic() + 30
        while True:
            try:
                follow = oai.responses.create(model=MODEL, input="more", previous_response_id=first.id)
                break
            except openai.InternalServerError:
                assert time.monotonic() < deadline, "the gateway did not recover"
                time.sleep(0.2)
        assert follow.status == "completed"
        assert oai.responses.retrieve(follow.id).id == follow.id


def test_two_gateways_share_one_postgres(own_postgres: postgres_support.Postgres, tokenizer: Any) -> None:
    url = own_postgres.create_database()
    frontend = Frontend(tokenizer)
    with gateway_process(url) as (_, first_url), gateway_process(url) as (_, second_url):
        items: list[Any] = [{"role": "user", "content": "Hello there"}]
        previous: str | None = None
        for turn, gateway_url in enumerate([first_url, second_url, first_url, second_url]):
            new: Any = items[-1:] if turn == 0 else [{"role": "user", "content": f"Turn {turn}"}]
            if turn:
                items += new
            response = client(gateway_url).responses.create(
                model=MODEL,
                input=new,
                previous_response_id=previous,
            )
            whole = frontend.prepare("responses", json.dumps({"model": MODEL, "input": items}))
            assert response.usage is not None
            assert response.usage.input_tokens == len(whole.prompt_ids), f"turn {turn}"
            items += [item.model_dump(mode="json", exclude_none=True) for item in response.output]
            previous = response.id
        # A turn made on one process is stored for the other.
        assert previous is not None
        assert client(first_url).responses.retrieve(previous).id == previous


def test_a_read_only_or_full_sqlite_gives_a_clear_503(tmp_path: Path, tokenizer: Any) -> None:
    store = SqliteStore(tmp_path / "store.sqlite3")
    settings = GatewaySettings(log_requests=False)
    gateway = Gateway(settings=settings, frontend=Frontend(tokenizer))
    gateway.stored.store = store
    with serving(gateway) as server:
        oai = client(server.url)
        first = oai.responses.create(model=MODEL, input="hello")
        connection = store._connection
        assert connection is not None

        def count() -> int:
            with store._lock:
                row = connection.execute("SELECT count(*) FROM responses").fetchone()
            return int(row[0])

        with store._lock:
            connection.execute("PRAGMA query_only = ON")  # as a read-only database refuses writes
        for stream in (False, True):
            body = {"model": MODEL, "input": "more", "previous_response_id": first.id, "stream": stream}
            failed = httpx.post(server.url + "/v1/responses", json=body, timeout=30)
            if stream:
                last = json.loads(parse_sse(failed.content)[-1][1])
                assert last["type"] == "error" and last["code"] == "store_unavailable"
                assert "read-only" in last["message"]
            else:
                assert failed.status_code == 503
                assert failed.json()["error"]["message"] == "The response store is read-only"
        assert count() == 1
        with store._lock:
            connection.execute("PRAGMA query_only = OFF")
            pages = connection.execute("PRAGMA page_count").fetchone()[0]
            connection.execute(f"PRAGMA max_page_count = {pages}")  # as a full disk refuses to grow
        failed = httpx.post(server.url + "/v1/responses", json={"model": MODEL, "input": "x" * 200_000}, timeout=30)
        assert failed.status_code == 503
        assert failed.json()["error"]["message"] == "The response store's disk is full"
        assert count() == 1
        with store._lock:
            connection.execute("PRAGMA max_page_count = 1073741823")
        assert oai.responses.create(model=MODEL, input="more", previous_response_id=first.id).status == "completed"


@pytest.mark.parametrize("pad", [0, 20_000], ids=["short", "long"])
def test_a_previous_response_gone_elsewhere_is_gone_for_a_gateway_that_holds_its_state(
    tmp_path: Path, tokenizer: Any, pad: int
) -> None:
    """A gateway encodes a turn from the previous turn's state in memory while the store says
    whether that response still stands: a response deleted through another gateway is 404
    there too, before any error of the new input, exactly as from a gateway that must read it
    (the answers are compared). A long new input (over 16 KiB) is encoded in a worker thread
    while the store is asked, a short one on the event loop."""
    frontend = Frontend(tokenizer)
    store = str(tmp_path / "store.sqlite3")
    gateways = [
        Gateway(settings=GatewaySettings(log_requests=False, store="sqlite://" + store), frontend=frontend)
        for _ in range(3)
    ]
    with serving(gateways[0]) as holder, serving(gateways[1]) as other, serving(gateways[2]) as reader:
        first = client(holder.url).responses.create(model=MODEL, input="hello")
        follow = client(holder.url).responses.create(model=MODEL, input="more", previous_response_id=first.id)
        assert follow.status == "completed"
        assert httpx.delete(other.url + f"/v1/responses/{first.id}", timeout=30).status_code == 200
        # Answers no call.
        bad_input = [{"type": "function_call_output", "call_id": "call_nope", "output": "x" * (1 + pad)}]
        for given in ("again" + " more" * (pad // 5), bad_input):
            body = {"model": MODEL, "input": given, "previous_response_id": first.id}
            held = httpx.post(holder.url + "/v1/responses", json=body, timeout=30)
            read = httpx.post(reader.url + "/v1/responses", json=body, timeout=30)
            assert held.status_code == read.status_code == 404, held.text
            assert held.json() == read.json()
        # A bad new input after a response that stands: the input's own error, both ways.
        body = {"model": MODEL, "input": bad_input, "previous_response_id": follow.id}
        held = httpx.post(holder.url + "/v1/responses", json=body, timeout=30)
        read = httpx.post(reader.url + "/v1/responses", json=body, timeout=30)
        assert held.status_code == read.status_code == 400, held.text
        assert held.json() == read.json()
        # A good one: the same turn both ways.
        body = {"model": MODEL, "input": "and then" + " more" * (pad // 5), "previous_response_id": follow.id}
        held = httpx.post(holder.url + "/v1/responses", json=body, timeout=30)
        read = httpx.post(reader.url + "/v1/responses", json=body, timeout=30)
        assert held.status_code == read.status_code == 200, held.text
        assert held.json()["output"][-1]["content"] == read.json()["output"][-1]["content"]
        assert held.json()["usage"]["input_tokens"] == read.json()["usage"]["input_tokens"]
