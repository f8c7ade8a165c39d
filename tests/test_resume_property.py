"""Incremental intake equals a cold parse: any body, any edit.

The gateway keeps the last body of recent Chat and Messages conversations (``IntakeCache``);
the next body of a conversation parses only what follows the messages both share, and renders
from the earlier prompt. Here hypothesis draws conversations and chains of edits (messages
appended, one changed anywhere, the last dropped, the tools, options, system prompt, model or
key order changed, JSON broken, nesting too deep) and each body goes through one ``Intake``
with the cache and is also prepared cold: the outcomes (prompt ids, conversation, options, or
the error and its message) must be equal. The Rust side has the same property on the typed
requests (``rust/protocol/src/resume/tests.rs``).
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway.errors import GatewayError
from deepseek_recipe.gateway.intake import Intake
from deepseek_recipe.gateway.settings import GatewaySettings

Body = dict[str, Any]
MODEL = "DeepSeek-V4-Pro"
PAD = "@PAD@"  # drawn bodies carry this; check_chain makes it long (bodies below 16 KiB never resume)
LONG = "The agent's standing instructions. " * 520


@functools.cache
def frontend() -> Frontend:
    return Frontend()


def intake(cache_bytes: int, depth: int = 127) -> Intake:
    options = {"intake_cache_bytes": cache_bytes, "max_json_depth": depth, "store": "none"}
    return Intake(GatewaySettings(**options), frontend())  # type: ignore[arg-type]


def outcome(gate: Intake, protocol: str, body: bytes, owner: str = "") -> tuple[Any, ...]:
    """What preparing ``body`` gives: every field the engine and the reply depend on, or the
    error the client would get."""
    try:
        encoded = gate.encode(protocol, body, owner=owner)  # type: ignore[arg-type]
        prepared = gate.checked(frontend().assemble, encoded, None)
    except GatewayError as error:
        return ("error", error.kind, str(error))
    request = prepared.request
    parsing = request.parsing_options
    return (
        list(prepared.prompt_ids),
        [repr(m) for m in request.conversation.messages],
        repr(request.conversation),
        prepared.model,
        prepared.stream,
        prepared.sampling,
        prepared.stop,
        parsing.parse_tool_calls,
        parsing.starts_in_tool_calls,
        parsing.parse_json_output,
        repr(parsing.thinking_initial_stage),
        None
        if prepared.output_constraint is None
        else (prepared.output_constraint.kind, prepared.output_constraint.schema),
    )


TEXTS = st.sampled_from(
    ["hi", "<｜User｜>typed", 'a "quoted" [text] {x}', "é ü 字 \n\t", "", "\\", "\u2028", "call it"]
)


def chat_message(draw: Any, index: int) -> Body:
    kind = draw(st.sampled_from(["user", "assistant", "calls", "tool", "system", "bad"]))
    text = draw(TEXTS)
    if kind == "calls":
        call = {"id": f"c{index}", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
        return {"role": "assistant", "content": None, "reasoning_content": text, "tool_calls": [call]}
    if kind == "tool":
        return {"role": "tool", "tool_call_id": f"c{index - 1}", "content": text}
    if kind == "bad":
        return {"role": "user", "content": [{"type": "text", "text": text}, {"type": "robot"}]}
    if kind == "assistant":
        return {"role": "assistant", "content": text, "reasoning_content": "thought " + text}
    return {"role": kind, "content": text}


def messages_message(draw: Any, index: int) -> Body:
    kind = draw(st.sampled_from(["user", "assistant", "tool_use", "tool_result", "bad"]))
    text = draw(TEXTS)
    if kind == "tool_use":
        use = {"type": "tool_use", "id": f"t{index}", "name": "f", "input": {"a": [text]}}
        return {"role": "assistant", "content": [{"type": "thinking", "thinking": text, "signature": ""}, use]}
    if kind == "tool_result":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{index - 1}", "content": text}]}
    if kind == "bad":
        return {"role": "robot", "content": text}
    return {"role": kind, "content": text or "x"}


def step(protocol: str, draw: Any, index: int) -> list[Body]:
    """A call and its result, or a reply and the next question."""
    text = draw(TEXTS)
    if protocol == "chat":
        if draw(st.booleans()):
            call = {"id": f"c{index}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            return [
                {"role": "assistant", "content": None, "reasoning_content": text, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{index}", "content": text},
            ]
        return [{"role": "assistant", "content": text, "reasoning_content": "r"}, {"role": "user", "content": text}]
    if draw(st.booleans()):
        use = {"type": "tool_use", "id": f"t{index}", "name": "f", "input": {"a": text}}
        result = {"type": "tool_result", "tool_use_id": f"t{index}", "content": text}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return [{"role": "assistant", "content": text or "x"}, {"role": "user", "content": text or "y"}]


TOOLS = {
    "chat": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}],
    "messages": [{"name": "f", "input_schema": {"type": "object", "properties": {}}}],
}


def base(protocol: str, draw: Any) -> Body:
    if protocol == "chat":
        first = {"role": "system", "content": PAD}
        body: Body = {"messages": [first, {"role": "user", "content": draw(TEXTS) or "go"}], "model": MODEL}
    else:
        first = {"role": "user", "content": PAD}
        body = {"model": MODEL, "max_tokens": 100, "messages": [first, {"role": "assistant", "content": "ok"}]}
    if draw(st.booleans()):
        body["tools"] = TOOLS[protocol]
    if draw(st.booleans()):
        body["stream"] = True
    return body


def edited(protocol: str, draw: Any, body: Body) -> Body:
    """``body`` after one edit a client might make (or a hostile one)."""
    body = json.loads(json.dumps(body))
    messages: list[Body] = body["messages"]
    new = chat_message if protocol == "chat" else messages_message
    edit = draw(
        st.sampled_from(
            ["append", "append", "append", "change", "drop", "tools", "option", "system", "model", "order", "deep"]
        )
    )
    if edit == "append":
        if draw(st.integers(0, 3)) > 0:  # mostly a step an agent loop takes
            messages.extend(step(protocol, draw, len(messages)))
        else:
            messages.extend(new(draw, len(messages)) for _ in range(draw(st.integers(1, 3))))
    elif edit == "change":
        messages[draw(st.integers(0, len(messages) - 1))] = new(draw, len(messages))
    elif edit == "drop" and len(messages) > 1:
        messages.pop()
    elif edit == "tools":
        if "tools" in body:
            del body["tools"]
        else:
            body["tools"] = TOOLS[protocol]
    elif edit == "option":
        key = draw(st.sampled_from(["temperature", "top_p", "stream", "max_tokens", "stop"]))
        value = draw(st.sampled_from([0.5, 2, -1, True, None, "x", ["s"], 10]))
        body[key] = value
    elif edit == "system":
        if protocol == "chat":
            messages[0] = {"role": "system", "content": PAD + draw(TEXTS)}
        else:
            body["system"] = draw(TEXTS)
    elif edit == "model":
        body["model"] = draw(st.sampled_from([MODEL, "DeepSeek-V4-Flash", "no-such-model"]))
    elif edit == "order":
        keys = list(body)
        random.Random(draw(st.integers(0, 1000))).shuffle(keys)
        body = {key: body[key] for key in keys}
    elif edit == "deep":
        depth = draw(st.integers(115, 126))
        nested: Any = "x"
        for _ in range(depth):
            nested = [nested]
        messages.append({"role": "user", "content": "deep", "name": nested} if protocol == "chat" else nested)
    return body


def style(draw: Any) -> tuple[bool, bool]:
    """How a client writes its bodies: spaced or compact, ASCII or UTF-8."""
    return draw(st.booleans()), draw(st.booleans())


def text(draw: Any, body: Body, how: tuple[bool, bool]) -> bytes:
    """``body`` as a client writes it, sometimes broken at the end."""
    spaced, ascii_only = how
    raw = json.dumps(body, ensure_ascii=ascii_only, separators=(", ", ": ") if spaced else (",", ":"))
    breakage = draw(st.sampled_from(["", "", "", "", "", "", "", "", "", "cut", "junk", "repeat"]))
    if breakage == "cut":
        raw = raw[: len(raw) - draw(st.integers(1, 40))]
    elif breakage == "junk":
        raw += " x"
    elif breakage == "repeat":  # a second `messages` key: a cold parse keeps the last
        raw = raw[:-1] + ', "messages": [{"role": "user", "content": "other"}]}'
    return raw.encode()


@st.composite
def conversations(draw: Any, protocol: str) -> list[bytes]:
    body, how = base(protocol, draw), style(draw)
    bodies = [text(draw, body, how)]
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 3)) > 0:  # mostly a turn that grows what was sent
            body = edited(protocol, draw, body)
        if draw(st.integers(0, 7)) == 0:  # rarely, another client's way of writing
            how = style(draw)
        bodies.append(text(draw, body, how))
    return bodies


def check_chain(protocol: str, bodies: list[bytes], depth: int = 127) -> int:
    """Each body's outcome through the cache equals its cold outcome; how many resumed."""
    cached, cold = intake(64 << 20, depth), intake(0, depth)
    resumed = 0
    for short in bodies:
        body = short.replace(PAD.encode(), LONG.encode())
        assert cached.bodies is not None
        resumed += cached.bodies.resume(protocol, body, "o") is not None  # a probe: it keeps nothing
        assert outcome(cached, protocol, body, "o") == outcome(cold, protocol, body, "o")
    return resumed


@settings(max_examples=60, deadline=None)
@given(bodies=conversations("chat"))
def test_chat_bodies_resumed_equal_cold_ones(bodies: list[bytes]) -> None:
    check_chain("chat", bodies)


@settings(max_examples=60, deadline=None)
@given(bodies=conversations("messages"))
def test_messages_bodies_resumed_equal_cold_ones(bodies: list[bytes]) -> None:
    check_chain("messages", bodies)


@settings(max_examples=20, deadline=None)
@given(bodies=conversations("chat"), depth=st.sampled_from([5, 8, 12]))
def test_a_lower_depth_limit_is_kept_by_resumed_bodies(bodies: list[bytes], depth: int) -> None:
    check_chain("chat", bodies, depth)


def agent_turns(protocol: str, turns: int) -> list[bytes]:
    """A plain growing agent loop: every body the last one plus a call and its result."""
    body: Body
    if protocol == "chat":
        body = {"messages": [{"role": "system", "content": LONG}, {"role": "user", "content": "go"}], "model": MODEL}
    else:
        opening = [{"role": "user", "content": LONG}, {"role": "assistant", "content": "ok"}]
        body = {"model": MODEL, "max_tokens": 100, "messages": opening}
    bodies = []
    messages: list[Body] = body["messages"]
    for turn in range(turns):
        if protocol == "chat":
            call = {"id": f"c{turn}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            messages += [
                {"role": "assistant", "content": None, "reasoning_content": "r", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{turn}", "content": f"result {turn}"},
            ]
        else:
            use = {"type": "tool_use", "id": f"t{turn}", "name": "f", "input": {}}
            result = {"type": "tool_result", "tool_use_id": f"t{turn}", "content": f"result {turn}"}
            messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
        body["tools"] = TOOLS[protocol]
        bodies.append(json.dumps(body).encode())
    return bodies


def test_a_growing_agent_loop_resumes_every_turn_after_the_second() -> None:
    # The first body is kept alone, the second with its parse; every later one resumes.
    for protocol in ("chat", "messages"):
        assert check_chain(protocol, agent_turns(protocol, 6)) == 4, protocol


def test_another_owner_never_resumes_a_body_and_the_cap_holds() -> None:
    gate = intake(64 << 20)
    bodies = agent_turns("chat", 3)
    for body in bodies[:2]:
        outcome(gate, "chat", body, "alice")
    assert gate.bodies is not None
    assert gate.bodies.resume("chat", bodies[2], "bob") is None
    assert gate.bodies.resume("chat", bodies[2], "alice") is not None
    small = intake(100_000)  # a body alone fits; a body with its parse costs over half of this
    outcome(small, "chat", bodies[0], "alice")
    assert small.bodies is not None and len(small.bodies) == 1
    outcome(small, "chat", bodies[1], "alice")
    assert len(small.bodies) == 0


def test_a_body_that_did_not_resume_is_kept_alone_and_the_next_resumes_again() -> None:
    # Long results after short opening messages: editing the user's first message keeps less
    # than half of the body, which is then parsed cold and kept alone.
    steps: list[Body] = []
    for n in range(8):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        steps += [
            {"role": "assistant", "content": None, "reasoning_content": "r", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "r" * 8000},
        ]
    opening = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}, {"role": "user", "content": "x"}]

    def body(messages: list[Body]) -> bytes:
        return json.dumps({"messages": messages, "model": MODEL, "tools": TOOLS["chat"]}).encode()

    first, second = body(opening + steps[:6]), body(opening + steps[:8])
    edited = [*opening[:2], {"role": "user", "content": "an early message edited"}]
    early, after = body(edited + steps[:10]), body(edited + steps[:12])
    gate = intake(64 << 20)
    for one in (first, second):
        assert outcome(gate, "chat", one, "o")[0] != "error"
    assert gate.bodies is not None
    assert gate.bodies.resume("chat", early, "o") is None  # it would reuse under half of itself
    outcome(gate, "chat", early, "o")  # kept alone
    assert gate.bodies.resume("chat", after, "o") is None  # the edited body has no parse kept
    # The same through check_chain: only the last body resumes (from `after`, kept with its parse).
    assert check_chain("chat", [first, second, early, after, body(edited + steps[:14])]) == 1
