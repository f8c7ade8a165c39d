"""Background Responses (``background: true``) through the official ``openai`` SDK against a
real server on loopback: answered at once ``queued``, polled to completion (stored, and
continued by id with the whole conversation's ids), cancelled (the engine's request aborted),
a streamed one left and followed again from a sequence number; every response and event
checked against the SDK's types."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseCreatedEvent, ResponseStreamEvent
from pydantic import TypeAdapter

import deepseek_recipe as dr
from deepseek_recipe.backends import BackendChunk, GenerationRequest
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.gateway.store import RunRecord, open_store
from deepseek_recipe.gateway.stored import owner_of
from tests import ports
from tests.gateway_support import RecordingDemo, ServerThread, closed_after_test, parse_sse, serving, settle
from tests.test_stored_responses import KEYS, MODEL, make_store, serving_on_store

RESPONSE = TypeAdapter(Response)
EVENT = TypeAdapter(ResponseStreamEvent)


class HeldDemo(RecordingDemo):
    """The demo engine, holding every request after its prompt's usage until ``release`` (and
    ``token_delay`` seconds per token after that)."""

    def __init__(self, tokenizer: dr.Tokenizer) -> None:
        super().__init__(tokenizer)
        self.gate = asyncio.Event()

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        first = True
        async for chunk in super().generate(request):
            yield chunk
            if first:
                first = False
                await self.gate.wait()


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def gateway(
    request: pytest.FixtureRequest, frontend: Frontend, tmp_path: Path
) -> Iterator[tuple[ServerThread, HeldDemo]]:
    engine = HeldDemo(frontend.tokenizer)
    with serving_on_store(engine, frontend, tmp_path, request) as running:
        yield running, engine


def client(server: ServerThread, key: str = KEYS[0]) -> openai.OpenAI:
    return closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0))


def release(server: ServerThread, engine: HeldDemo, *, token_delay: float = 0.0) -> None:
    engine._delay = token_delay

    async def open_gate() -> None:
        engine.gate.set()

    server.call(open_gate)


def raw_get(server: ServerThread, path: str, key: str = KEYS[0]) -> httpx.Response:
    return httpx.get(server.url + path, headers={"authorization": f"Bearer {key}"}, timeout=30)


def poll(oai: openai.OpenAI, response_id: str, timeout: float = 30) -> Response:
    deadline = time.monotonic() + timeout
    while True:
        response = oai.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress") or time.monotonic() > deadline:
            return response
        time.sleep(0.02)


def test_answered_queued_then_polled_to_completion_and_continued(
    gateway: tuple[ServerThread, HeldDemo], frontend: Frontend
) -> None:
    server, engine = gateway
    oai = client(server)
    instructions = "You are terse."
    first = [{"role": "user", "content": "Say something."}]
    started = oai.responses.create(model=MODEL, input=first, instructions=instructions, background=True)  # type: ignore[arg-type]
    assert started.status == "queued" and started.background is True and started.output == []
    # While the engine holds it: polled as it stands, in the SDK's shape, for its owner only.
    assert settle(lambda: engine.in_flight == 1)
    running = raw_get(server, f"/v1/responses/{started.id}")
    assert running.status_code == 200
    RESPONSE.validate_python(running.json())
    assert running.json()["status"] in ("queued", "in_progress") and running.json()["background"] is True
    assert raw_get(server, f"/v1/responses/{started.id}", KEYS[1]).status_code == 404
    release(server, engine)
    done = poll(oai, started.id)
    assert done.status == "completed" and done.background is True and done.output_text
    stored = raw_get(server, f"/v1/responses/{started.id}")
    RESPONSE.validate_python(stored.json())
    # The same request in the foreground answers the same output; a background response is
    # continued like any stored one, with the whole conversation's ids.
    foreground = oai.responses.create(model=MODEL, input=first, instructions=instructions)  # type: ignore[arg-type]
    assert foreground.output_text == done.output_text and foreground.background is False
    follow = oai.responses.create(
        model=MODEL, input="And then?", instructions=instructions, previous_response_id=started.id
    )
    items: list[Any] = [*first, *[item.model_dump(mode="json", exclude_none=True) for item in done.output]]
    items.append({"role": "user", "content": "And then?"})
    assert follow.status == "completed"
    assert engine.prompts[-1] == whole_ids_without_tools(frontend, items, instructions)


def whole_ids_without_tools(frontend: Frontend, items: list[Any], instructions: str) -> list[int]:
    body = {"model": MODEL, "instructions": instructions, "input": items}
    return list(frontend.prepare("responses", json.dumps(body)).prompt_ids)


def test_cancel(gateway: tuple[ServerThread, HeldDemo]) -> None:
    server, engine = gateway
    oai = client(server)
    started = oai.responses.create(model=MODEL, input="Take your time.", background=True)
    assert settle(lambda: engine.in_flight == 1)
    other = client(server, KEYS[1])
    with pytest.raises(openai.NotFoundError):
        other.responses.cancel(started.id)
    with pytest.raises(openai.BadRequestError):
        oai.responses.delete(started.id)  # still running
    cancelled = oai.responses.cancel(started.id)
    RESPONSE.validate_python(cancelled.model_dump(mode="json"))
    assert cancelled.id == started.id and cancelled.status == "cancelled"
    assert settle(lambda: engine.in_flight == 0), "the engine's request was aborted"
    assert oai.responses.retrieve(started.id).status == "cancelled"
    assert oai.responses.cancel(started.id).status == "cancelled"  # again: the same answer
    # As curl -X POST sends it: no body, no content type.
    again = httpx.post(f"{server.url}/v1/responses/{started.id}/cancel", headers={"authorization": f"Bearer {KEYS[0]}"})
    assert again.status_code == 200 and again.json()["status"] == "cancelled"
    with pytest.raises(openai.NotFoundError):  # a cancelled response is not stored: nothing to continue
        oai.responses.create(model=MODEL, input="more", previous_response_id=started.id)
    # Only a running background response can be cancelled.
    release(server, engine)
    foreground = oai.responses.create(model=MODEL, input="Now.")
    with pytest.raises(openai.BadRequestError) as caught:
        oai.responses.cancel(foreground.id)
    assert "background" in caught.value.message
    finished = oai.responses.create(model=MODEL, input="Quick.", background=True)
    assert poll(oai, finished.id).status == "completed"
    with pytest.raises(openai.BadRequestError) as caught:
        oai.responses.cancel(finished.id)
    assert "already completed" in caught.value.message
    with pytest.raises(openai.NotFoundError):
        oai.responses.cancel("resp_unknown")
    # A cancelled response is deleted from memory; then it is gone.
    oai.responses.delete(started.id)
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(started.id)


def test_a_stream_left_is_followed_again_from_a_sequence_number(gateway: tuple[ServerThread, HeldDemo]) -> None:
    server, engine = gateway
    oai = client(server)
    release(server, engine, token_delay=0.02)
    first: list[Any] = []
    with oai.responses.create(model=MODEL, input="Tell me a story.", background=True, stream=True) as events:
        for event in events:
            first.append(event)
            if len(first) == 4:
                break  # the client leaves; the response goes on
    response_id = first[0].response.id
    assert [event.sequence_number for event in first] == [0, 1, 2, 3]
    rest = list(oai.responses.retrieve(response_id, stream=True, starting_after=3))
    every = [*first, *rest]
    for event in every:
        EVENT.validate_python(event.model_dump(mode="json"))
    assert [event.sequence_number for event in every] == list(range(len(every)))
    assert every[-1].type == "response.completed" and every[-1].response.background is True
    assert oai.responses.retrieve(response_id).output_text == every[-1].response.output_text
    # Followed again from the start: the same events.
    again = list(oai.responses.retrieve(response_id, stream=True))
    assert [e.model_dump(mode="json") for e in again] == [e.model_dump(mode="json") for e in every]
    # A response made without stream (or in the foreground) has no events to follow.
    polled = oai.responses.create(model=MODEL, input="Quick.", background=True)
    assert poll(oai, polled.id).status == "completed"
    for response in (polled.id, oai.responses.create(model=MODEL, input="Now.").id):
        with pytest.raises(openai.BadRequestError):
            list(oai.responses.retrieve(response, stream=True))
    with pytest.raises(openai.NotFoundError):
        list(client(server, KEYS[1]).responses.retrieve(response_id, stream=True))
    # Past its last event: the stream ends with none; before the first: every event.
    past = raw_get(server, f"/v1/responses/{response_id}?stream=true&starting_after=99999")
    assert past.status_code == 200 and b"event:" not in past.content
    before = raw_get(server, f"/v1/responses/{response_id}?stream=true&starting_after=-5")
    assert before.content.count(b"event: ") == len(every)
    # Anything but an integer is a 400 in OpenAI's shape that does not repeat it.
    for bad in ("abc", "3_0", "%203", "%D9%A3", "1e3", "9" * 5000):
        refused = raw_get(server, f"/v1/responses/{response_id}?stream=true&starting_after={bad}")
        assert refused.status_code == 400, bad
        error = refused.json()["error"]
        assert error["type"] == "invalid_request_error" and "starting_after" in error["message"]
        assert bad[:8] not in error["message"]


def test_an_engine_failure_fails_the_response(frontend: Frontend, tmp_path: Path) -> None:
    settings = GatewaySettings(log_requests=False, store="memory", connect_timeout=2)
    backend = CompletionsBackend(f"http://127.0.0.1:{ports.free_port()}")  # nothing listens there
    with serving(Gateway(settings=settings, frontend=frontend, backend=backend)) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        started = oai.responses.create(model=MODEL, input="Hello", background=True)
        assert started.status == "queued"
        failed = poll(oai, started.id)
        RESPONSE.validate_python(failed.model_dump(mode="json"))
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.code == "server_error" and "Inference backend error" in failed.error.message


def test_background_needs_a_store_and_so_does_continuing(frontend: Frontend) -> None:
    with serving(Gateway(settings=GatewaySettings(log_requests=False, store="memory"), frontend=frontend)) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        with pytest.raises(openai.BadRequestError) as caught:
            oai.responses.create(model=MODEL, input="Hello", background=True, store=False)
        assert "store" in caught.value.message
        with pytest.raises(openai.BadRequestError):
            oai.responses.create(model=MODEL, input="Hello", extra_body={"background": "yes"})
    with serving(Gateway(settings=GatewaySettings(log_requests=False, store="none"), frontend=frontend)) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        for kwargs in ({"background": True}, {"previous_response_id": "resp_1"}, {"conversation": "conv_1"}):
            with pytest.raises(openai.BadRequestError) as caught:
                oai.responses.create(model=MODEL, input="Hello", **kwargs)
            assert "stores no responses" in caught.value.message
            with pytest.raises(openai.BadRequestError):
                oai.responses.input_tokens.count(model=MODEL, input="Hello", extra_body=kwargs)
        assert oai.responses.create(model=MODEL, input='Say "background".').status == "completed"
        body = {"model": MODEL, "input": "Hello"}
        assert oai.responses.input_tokens.count(input="Hello").input_tokens == len(
            frontend.prepare("responses", json.dumps(body)).prompt_ids
        )


def test_runs_keep_their_events_within_the_budget_and_finished_ones_for_their_retention() -> None:
    from deepseek_recipe.gateway.background import Run, Runs

    frame = b'event: response.output_text.delta\ndata: {"delta":"' + b"x" * 900 + b'"}\n\n'

    async def scenario() -> None:
        def run_named(name: str) -> Run:
            return Run(name, "owner", 0, {"id": name, "status": "queued"}, stream=True)

        async def write(run: Run) -> None:
            await run.send({"type": "http.response.body", "body": frame, "more_body": True})

        # About 1.3 kB each against 3 kB: a run that ended goes, oldest first, to make room.
        runs = Runs(retention=60, budget=3_000)
        made = []
        for k in range(3):
            run = run_named(f"resp_{k}")
            runs.add(run)
            await write(run)
            assert runs.get(run.id, "owner") is run and runs.get(run.id, "another") is None
            assert not run.events_lost and len(run.frames) == 2  # the queued response.created, then this
            run.end()
            runs.ended(run)
            assert run.status == "failed"  # it never completed
            made.append(run)
        assert [runs.get(run.id, "owner") is not None for run in made] == [False, True, True]
        # Running runs are never dropped: one that would go over keeps no events (and is not
        # followed again), and gives back what it held; the others keep theirs.
        tight = Runs(retention=60, budget=1_500)
        first, second = run_named("resp_a"), run_named("resp_b")
        tight.add(first)
        await write(first)
        tight.add(second)
        await write(second)
        assert not first.events_lost and len(first.frames) == 2
        assert second.events_lost and second.frames == [] and tight.get("resp_b", "owner") is second
        assert tight._bytes == first.size + second.size
        # Finished runs go after their retention.
        short = Runs(retention=0.05, budget=1 << 20)
        run = run_named("resp_short")
        short.add(run)
        run.end()
        short.ended(run)
        assert short.get("resp_short", "owner") is run
        await asyncio.sleep(0.1)
        assert short.get("resp_short", "owner") is None
        assert short._bytes == 0

    asyncio.run(scenario())


def test_a_drain_past_its_grace_fails_a_running_background_response(frontend: Frontend) -> None:
    engine = HeldDemo(frontend.tokenizer)
    settings = GatewaySettings(log_requests=False, store="memory", shutdown_grace=0.2)
    gateway = Gateway(settings=settings, frontend=frontend, backend=engine)
    with serving(gateway) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        started = oai.responses.create(model=MODEL, input="Hello", background=True)
        assert settle(lambda: engine.in_flight == 1)
        server.call(gateway.lifecycle.drain)
        failed = oai.responses.retrieve(started.id)
        assert failed.status == "failed" and failed.error is not None
        assert "shutting down" in failed.error.message
        assert settle(lambda: engine.in_flight == 0)


def test_a_background_stream_names_its_response_at_once_then_keeps_alive(frontend: Frontend) -> None:
    engine = HeldDemo(frontend.tokenizer)
    settings = GatewaySettings(log_requests=False, store="memory", keepalive_interval=0.1)
    with serving(Gateway(settings=settings, frontend=frontend, backend=engine)) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        body = {"model": MODEL, "input": "Hello", "background": True, "stream": True}
        with httpx.stream("POST", server.url + "/v1/responses", json=body, timeout=30) as streamed:
            assert streamed.status_code == 200
            chunks = streamed.iter_bytes()
            # While the engine holds it: the queued response at once, then keep-alive comments.
            first = next(chunks)
            name, data = parse_sse(first)[0]
            created = EVENT.validate_json(data)
            assert isinstance(created, ResponseCreatedEvent)
            assert name == "response.created" and created.sequence_number == 0
            assert created.response.status == "queued" and created.response.background is True
            assert next(chunks).startswith(b": keep-alive")
            assert oai.responses.cancel(created.response.id).status == "cancelled"
            rest = b"".join(chunks)  # the stream ends
        assert b"event:" not in rest
        assert settle(lambda: engine.in_flight == 0)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def two_gateways(
    request: pytest.FixtureRequest, frontend: Frontend, tmp_path: Path
) -> Iterator[tuple[ServerThread, HeldDemo, ServerThread]]:
    """Two gateways on one store, as two processes (or machines) would be: the first's engine
    holds its requests."""
    engine = HeldDemo(frontend.tokenizer)
    settings = GatewaySettings(log_requests=False, api_keys=KEYS)  # type: ignore[arg-type]
    first = Gateway(settings=settings, frontend=frontend, backend=engine)
    second = Gateway(settings=settings, frontend=frontend, backend=RecordingDemo(frontend.tokenizer))
    if request.param == "memory":
        first.stored.store = second.stored.store = open_store("memory")
    else:
        url = f"sqlite://{tmp_path / 'store.sqlite3'}"
        if request.param == "postgresql":
            url = request.getfixturevalue("postgres").create_database()
        first.stored.store, second.stored.store = open_store(url), open_store(url)
    with serving(first) as running_first, serving(second) as running_second:
        yield running_first, engine, running_second


def test_another_process_polls_and_cancels_a_background_response(
    two_gateways: tuple[ServerThread, HeldDemo, ServerThread],
) -> None:
    first, engine, second = two_gateways
    here, there = client(first), client(second)
    started = here.responses.create(model=MODEL, input="Take your time.", background=True)
    assert settle(lambda: engine.in_flight == 1)
    # The other process answers for it from the store: as it stands, for its owner only.
    polled = raw_get(second, f"/v1/responses/{started.id}")
    assert polled.status_code == 200 and polled.json()["status"] in ("queued", "in_progress")
    RESPONSE.validate_python(polled.json())
    assert raw_get(second, f"/v1/responses/{started.id}", KEYS[1]).status_code == 404
    with pytest.raises(openai.BadRequestError):  # its events are the running process's
        list(there.responses.retrieve(started.id, stream=True))
    with pytest.raises(openai.BadRequestError):  # still running
        there.responses.delete(started.id)
    # Cancelled through the other process: the running one aborts it at its next heartbeat.
    assert there.responses.cancel(started.id).status == "cancelled"
    assert settle(lambda: engine.in_flight == 0), "the engine's request was aborted"
    assert here.responses.retrieve(started.id).status == "cancelled"
    assert settle(lambda: there.responses.retrieve(started.id).status == "cancelled")
    there.responses.delete(started.id)
    with pytest.raises(openai.NotFoundError):
        there.responses.retrieve(started.id)
    with pytest.raises(openai.NotFoundError):  # the process that ran it forgets it too
        here.responses.retrieve(started.id)
    with pytest.raises(openai.NotFoundError):
        here.responses.cancel(started.id)
    # One that completes is a stored turn for both, continued through the other.
    release(first, engine)
    done = here.responses.create(model=MODEL, input="Quick.", background=True)
    assert poll(there, done.id).status == "completed"
    follow = there.responses.create(model=MODEL, input="More.", previous_response_id=done.id)
    assert follow.status == "completed"
    there.responses.delete(done.id)
    with pytest.raises(openai.NotFoundError):  # not "already completed": it is gone
        here.responses.cancel(done.id)
    # A streamed one deleted through the other process is not followed again where it ran.
    with here.responses.create(model=MODEL, input="Stream it.", background=True, stream=True) as events:
        streamed = [event.response.id for event in events if event.type == "response.completed"]
    assert list(here.responses.retrieve(streamed[0], stream=True))  # kept: followed again
    there.responses.delete(streamed[0])
    with pytest.raises(openai.NotFoundError):
        list(here.responses.retrieve(streamed[0], stream=True))


def test_a_background_response_whose_process_stopped_is_failed(frontend: Frontend) -> None:
    store = open_store("memory")
    assert store is not None
    gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend)
    gateway.stored.store = store
    now = int(time.time())
    response = {"id": "resp_gone", "object": "response", "status": "in_progress", "background": True}
    stopped = RunRecord("resp_gone", owner_of(None), json.dumps(response).encode(), now - 100, now + 3600)
    asyncio.run(store.put_run(stopped))
    with serving(gateway) as server:
        got = raw_get(server, "/v1/responses/resp_gone")
        assert got.status_code == 200
        assert got.json()["status"] == "failed" and "stopped" in got.json()["error"]["message"]


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgresql"])
def test_the_stores_keep_background_runs(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = make_store(kind, tmp_path, request)

    async def scenario() -> None:
        await store.open()
        try:
            now = 1_000
            await store.put_run(RunRecord("resp_a", "me", b'{"status":"queued"}', now, now + 60))
            assert await store.get_run("someone else", "resp_a", now) is None
            assert await store.request_cancel("someone else", "resp_a", now) is False
            assert await store.beat(["resp_a", "resp_unknown"], now + 1) == []
            assert await store.request_cancel("me", "resp_a", now + 1) is True
            # A later write of the run keeps the cancel asked for; the heartbeat reports it.
            await store.put_run(RunRecord("resp_a", "me", b'{"status":"in_progress"}', now + 2, now + 60))
            assert await store.beat(["resp_a"], now + 3) == ["resp_a"]
            got = await store.get_run("me", "resp_a", now + 3)
            assert got is not None and got.response == b'{"status":"in_progress"}'
            assert got.heartbeat == now + 3 and got.cancel_requested
            assert await store.get_run("me", "resp_a", now + 60) is None  # expired
            await store.put_run(RunRecord("resp_b", "me", b"{}", now, now + 10))
            assert await store.cleanup(now + 100, 100) == 2  # both runs expired
            assert await store.get_run("me", "resp_b", now) is None
            await store.put_run(RunRecord("resp_c", "me", b"{}", now, now + 10))
            assert await store.delete_run("someone else", "resp_c") is False
            assert await store.delete_run("me", "resp_c") is True
            assert await store.get_run("me", "resp_c", now) is None
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_sqlite_store_of_the_first_schema_is_migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deepseek_recipe.gateway.store import sql

    url = f"sqlite://{tmp_path / 'old.sqlite3'}"

    async def open_and(work: Any) -> Any:
        store = open_store(url)
        assert store is not None
        await store.open()
        try:
            return await work(store)
        finally:
            await store.close()

    with monkeypatch.context() as patched:  # a database made before background runs
        patched.setattr(sql, "MIGRATIONS", sql.MIGRATIONS[:1])
        asyncio.run(open_and(lambda store: store.get_response("me", "resp_x", 0)))
    run = RunRecord("resp_a", "me", b"{}", 0, 10)
    asyncio.run(open_and(lambda store: store.put_run(run)))
    assert asyncio.run(open_and(lambda store: store.get_run("me", "resp_a", 0))) == run


def test_a_stream_over_the_budget_ends_early_and_is_polled_instead(frontend: Frontend) -> None:
    engine = HeldDemo(frontend.tokenizer)
    settings = GatewaySettings(log_requests=False, store="memory", background_bytes=4_000)
    with serving(Gateway(settings=settings, frontend=frontend, backend=engine)) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        release(server, engine)
        with oai.responses.create(model=MODEL, input="Tell me a story.", background=True, stream=True) as events:
            seen = list(events)
        assert seen and seen[-1].type != "response.completed"  # cut short: its events were not kept
        response_id = seen[0].response.id  # type: ignore[union-attr]
        assert poll(oai, response_id).status == "completed"
        with pytest.raises(openai.BadRequestError) as caught:
            list(oai.responses.retrieve(response_id, stream=True))
        assert "not kept" in caught.value.message


def test_a_gateway_that_stops_fails_its_running_background_responses_in_the_store(
    frontend: Frontend, tmp_path: Path
) -> None:
    url = f"sqlite://{tmp_path / 'store.sqlite3'}"
    engine = HeldDemo(frontend.tokenizer)
    settings = GatewaySettings(log_requests=False, store=url)
    with serving(Gateway(settings=settings, frontend=frontend, backend=engine)) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        started = oai.responses.create(model=MODEL, input="Hello", background=True)
        assert settle(lambda: engine.in_flight == 1)
    # Stopped (its lifespan's shutdown): the run was ended, and its last state written first.
    with serving(Gateway(settings=settings, frontend=frontend)) as server:
        oai = closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0))
        failed = oai.responses.retrieve(started.id)
        assert failed.status == "failed" and failed.error is not None
        assert "shutting down" in failed.error.message


def test_a_background_response_in_a_conversation_adds_its_items_when_it_completes(
    gateway: tuple[ServerThread, HeldDemo],
) -> None:
    server, engine = gateway
    oai = client(server)
    conversation = oai.conversations.create()
    started = oai.responses.create(model=MODEL, input="Hello there.", conversation=conversation.id, background=True)
    assert settle(lambda: engine.in_flight == 1)
    assert list(oai.conversations.items.list(conversation.id)) == []  # nothing until it completes
    release(server, engine)
    done = poll(oai, started.id)
    assert done.status == "completed" and done.conversation is not None and done.conversation.id == conversation.id
    items = list(oai.conversations.items.list(conversation.id, order="asc"))
    assert [item.type for item in items] == ["message"] + [item.type for item in done.output]
