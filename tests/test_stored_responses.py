"""Stored Responses through the official ``openai`` SDK against a real server on loopback, on
every store (memory, SQLite, and a real PostgreSQL the tests start): an agent loop sent as
``previous_response_id`` + new input, or through a ``conversation``, gives the engine exactly
the prompt ids of the same conversation sent whole; responses are fetched, listed and
deleted; another key's objects are not found."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.conversations import Conversation, ConversationDeletedResource, ConversationItemList
from openai.types.responses import InputTokenCountResponse, Response, ResponseItem
from pydantic import TypeAdapter

import deepseek_recipe as dr
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.gateway.store import Store, open_store
from tests import postgres_support
from tests.gateway_support import RecordingDemo, ServerThread, closed_after_test, serving

MODEL = "DeepSeek-V4-Pro"
KEYS = ["sk-first", "sk-second"]
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
ITEM = TypeAdapter(ResponseItem)


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


def make_store(kind: str, directory: Path, request: pytest.FixtureRequest) -> Store:
    if kind == "postgresql":
        server: postgres_support.Postgres = request.getfixturevalue("postgres")
        url = server.create_database()
    else:
        url = "memory" if kind == "memory" else f"sqlite://{directory / 'store.sqlite3'}"
    store = open_store(url)
    assert store is not None
    return store


@contextmanager
def serving_on_store(
    engine: RecordingDemo, frontend: Frontend, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ServerThread]:
    """A gateway in front of ``engine`` taking the test's keys, on the store ``request.param``
    names."""
    settings = GatewaySettings(log_requests=False, api_keys=KEYS)  # type: ignore[arg-type]
    gateway = Gateway(settings=settings, frontend=frontend, backend=engine)
    gateway.stored.store = make_store(request.param, tmp_path, request)
    with serving(gateway) as running:
        yield running


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def gateway(
    request: pytest.FixtureRequest, frontend: Frontend, tmp_path: Path
) -> Iterator[tuple[ServerThread, RecordingDemo]]:
    engine = RecordingDemo(frontend.tokenizer)
    with serving_on_store(engine, frontend, tmp_path, request) as running:
        yield running, engine


def client(server: ServerThread, key: str = KEYS[0]) -> openai.OpenAI:
    return closed_after_test(openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0))


def next_input(response: Response, turn: int) -> list[dict[str, Any]]:
    """What an agent sends after ``response``: the output of each call it made, or a new
    question when it made none."""
    calls = [item for item in response.output if item.type == "function_call"]
    if calls:
        return [
            {"type": "function_call_output", "call_id": call.call_id, "output": f"contents {turn} of {call.call_id}"}
            for call in calls
        ]
    return [{"role": "user", "content": f"Question {turn}: and then?"}]


def whole_ids(frontend: Frontend, items: list[Any], instructions: str) -> list[int]:
    body = {"model": MODEL, "instructions": instructions, "tools": TOOLS, "input": items}
    return list(frontend.prepare("responses", json.dumps(body)).prompt_ids)


def output_items(response: Response) -> list[Any]:
    return [item.model_dump(mode="json", exclude_none=True) for item in response.output]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_an_agent_loop_continued_by_id_gets_the_whole_conversations_ids(
    gateway: tuple[ServerThread, RecordingDemo], frontend: Frontend, stream: bool
) -> None:
    server, engine = gateway
    oai = client(server)
    items: list[Any] = [{"role": "user", "content": "Read the files and fix the bug."}]
    new_input = list(items)
    previous: str | None = None
    for turn in range(20):
        instructions = f"You are a careful agent (turn {turn})."  # never carried over
        kwargs: dict[str, Any] = {"model": MODEL, "input": new_input, "instructions": instructions, "tools": TOOLS}
        if previous is not None:
            kwargs["previous_response_id"] = previous
        if stream:
            with oai.responses.stream(**kwargs) as events:
                response = events.get_final_response()
        else:
            response = oai.responses.create(**kwargs)
        assert response.status == "completed"
        assert response.previous_response_id == previous
        assert response.model_dump()["store"] is True
        assert engine.prompts[-1] == whole_ids(frontend, items, instructions), f"turn {turn}"
        items += output_items(response)
        new_input = next_input(response, turn)
        items += new_input
        previous = response.id
    assert previous is not None
    assert any(item.get("type") == "function_call_output" for item in items), "the loop called tools"
    # The last response is stored: fetched as it was, its input items listed in pages.
    fetched = oai.responses.retrieve(previous)
    assert fetched.id == previous and fetched.output_text == response.output_text
    listed = list(oai.responses.input_items.list(previous, limit=7, order="asc"))
    expected = items[: len(items) - len(new_input) - len(response.output)]
    assert len(listed) == len(expected)
    for got, want in zip(listed, expected):
        assert got.type == (want.get("type") or "message")
        assert got.id
    newest_first = list(oai.responses.input_items.list(previous))
    assert [i.id for i in newest_first] == [i.id for i in listed][::-1]


def test_a_conversation_gets_the_whole_conversations_ids(
    gateway: tuple[ServerThread, RecordingDemo], frontend: Frontend
) -> None:
    server, engine = gateway
    oai = client(server)
    first = {"type": "message", "role": "user", "content": "Read the files and fix the bug."}
    conversation = oai.conversations.create(items=[first], metadata={"topic": "bug"})  # type: ignore[list-item]
    assert conversation.metadata == {"topic": "bug"}
    items: list[Any] = [first]
    new_input: list[Any] = []
    for turn in range(20):
        instructions = f"You are a careful agent (turn {turn})."
        response = oai.responses.create(
            model=MODEL, conversation=conversation.id, input=new_input, instructions=instructions, tools=TOOLS
        )
        assert response.conversation is not None and response.conversation.id == conversation.id
        assert engine.prompts[-1] == whole_ids(frontend, items, instructions), f"turn {turn}"
        items += output_items(response)
        new_input = next_input(response, turn)
        items += new_input
    stored = list(oai.conversations.items.list(conversation.id, order="asc", limit=100))
    assert len(stored) == len(items) - len(new_input)
    for item in stored:
        ITEM.validate_python(item.model_dump(mode="json"))


def raw(server: ServerThread, method: str, path: str, key: str = KEYS[0], **kwargs: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    return httpx.request(method, server.url + path, headers=headers, timeout=30, **kwargs)


def test_get_delete_and_another_keys_404(gateway: tuple[ServerThread, RecordingDemo]) -> None:
    server, _ = gateway
    oai = client(server)
    response = oai.responses.create(model=MODEL, input="Hello", metadata={"k": "v"})
    assert response.metadata == {"k": "v"}
    got = raw(server, "GET", f"/v1/responses/{response.id}")
    assert got.status_code == 200
    TypeAdapter(Response).validate_python(got.json())
    assert got.json()["id"] == response.id
    # Another key: every route answers 404, in OpenAI's error shape.
    other = client(server, KEYS[1])
    for call in (
        lambda: other.responses.retrieve(response.id),
        lambda: other.responses.delete(response.id),
        lambda: list(other.responses.input_items.list(response.id)),
        lambda: other.responses.create(model=MODEL, input="more", previous_response_id=response.id),
    ):
        with pytest.raises(openai.NotFoundError) as caught:
            call()
        assert caught.value.body is not None
    for path in (f"/v1/responses/{response.id}", f"/v1/responses/{response.id}/input_items"):
        denied = raw(server, "GET", path, KEYS[1])
        assert denied.status_code == 404
        assert set(denied.json()["error"]) == {"message", "type", "param", "code"}
    # Continuing works for the owner, until the response is deleted.
    follow = oai.responses.create(model=MODEL, input="more", previous_response_id=response.id)
    assert follow.previous_response_id == response.id
    deleted = raw(server, "DELETE", f"/v1/responses/{response.id}")
    assert deleted.status_code == 200 and deleted.json() == {"id": response.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError):
        oai.responses.create(model=MODEL, input="again", previous_response_id=response.id)
    # What continued it still does.
    assert oai.responses.create(model=MODEL, input="on", previous_response_id=follow.id).status == "completed"
    # Unknown ids, both ids at once, store: false.
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve("resp_unknown")
    with pytest.raises(openai.BadRequestError):
        oai.responses.create(model=MODEL, input="x", previous_response_id=follow.id, conversation="conv_x")
    unstored = oai.responses.create(model=MODEL, input="not kept", store=False)
    assert unstored.model_dump()["store"] is False
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(unstored.id)


def test_conversations_api(gateway: tuple[ServerThread, RecordingDemo]) -> None:
    server, _ = gateway
    oai = client(server)
    created = oai.conversations.create(
        items=[{"type": "message", "role": "user", "content": "hi"}],
        metadata={"a": "1"},
    )
    TypeAdapter(Conversation).validate_python(created.model_dump(mode="json"))
    assert oai.conversations.retrieve(created.id).metadata == {"a": "1"}
    assert oai.conversations.update(created.id, metadata={"a": "2"}).metadata == {"a": "2"}
    added = oai.conversations.items.create(
        created.id,
        items=[
            {"type": "message", "role": "assistant", "content": "hello"},
            {"type": "message", "role": "user", "content": "more"},
        ],
    )
    TypeAdapter(ConversationItemList).validate_python(added.model_dump(mode="json"))
    listed = oai.conversations.items.list(created.id, order="asc")
    assert [item.type for item in listed] == ["message"] * 3
    first_id = listed.data[0].id
    assert first_id is not None
    assert oai.conversations.items.retrieve(first_id, conversation_id=created.id).id == first_id
    after_delete = oai.conversations.items.delete(first_id, conversation_id=created.id)
    assert after_delete.id == created.id
    assert len(list(oai.conversations.items.list(created.id))) == 2
    other = client(server, KEYS[1])
    with pytest.raises(openai.NotFoundError):
        other.conversations.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.create(model=MODEL, input="x", conversation=created.id)
    gone = oai.conversations.delete(created.id)
    TypeAdapter(ConversationDeletedResource).validate_python(gone.model_dump(mode="json"))
    with pytest.raises(openai.NotFoundError):
        oai.conversations.retrieve(created.id)


def test_input_tokens_count_what_the_engine_would_get(
    gateway: tuple[ServerThread, RecordingDemo], frontend: Frontend
) -> None:
    server, engine = gateway
    oai = client(server)
    first: list[Any] = [{"role": "user", "content": "Read the files and fix the bug."}]
    counted = oai.responses.input_tokens.count(model=MODEL, input=first, instructions="Be brief.", tools=TOOLS)
    TypeAdapter(InputTokenCountResponse).validate_python(counted.model_dump(mode="json"))
    assert counted.input_tokens == len(whole_ids(frontend, first, "Be brief."))
    # Without a model, the first served one's prompt is counted.
    assert oai.responses.input_tokens.count(input=first, instructions="Be brief.", tools=TOOLS) == counted
    # A request continuing a stored response counts the whole conversation, as the engine gets it.
    response = oai.responses.create(model=MODEL, input=first, instructions="Be brief.", tools=TOOLS)
    more: Any = next_input(response, 1)
    continued = oai.responses.input_tokens.count(
        model=MODEL, input=more, instructions="Now more.", tools=TOOLS, previous_response_id=response.id
    )
    items = [*first, *output_items(response), *more]
    assert continued.input_tokens == len(whole_ids(frontend, items, "Now more."))
    usage = oai.responses.create(
        model=MODEL, input=more, instructions="Now more.", tools=TOOLS, previous_response_id=response.id
    ).usage
    assert usage is not None and usage.input_tokens == continued.input_tokens
    assert len(engine.prompts) == 2  # counting asked the engine nothing
    with pytest.raises(openai.NotFoundError):
        oai.responses.input_tokens.count(model=MODEL, input="x", previous_response_id="resp_unknown")
    with pytest.raises(openai.NotFoundError):
        client(server, KEYS[1]).responses.input_tokens.count(model=MODEL, input="x", previous_response_id=response.id)
    with pytest.raises(openai.BadRequestError):
        oai.responses.input_tokens.count(model=MODEL, extra_body={"input": [{"role": "user", "content": 3}]})
