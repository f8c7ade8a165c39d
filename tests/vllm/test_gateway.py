"""The gateway (``--backend completions``) in front of a real vLLM, in each protocol.

vLLM receives the gateway's exact prompt ids on ``/v1/completions`` and streams output ids
back (``return_token_ids``); outputs are scripted as in ``test_plugin.py``. The last test kills
vLLM, so it runs against a server of its own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.frontend import Protocol
from deepseek_recipe.gateway import GatewaySettings, create_app
from tests.gateway_support import (
    ServerThread,
    chat_stream_choice,
    check_response,
    check_stream,
    parse_sse,
    serving,
    settle,
)
from tests.vllm.servers import MAX_MODEL_LEN, SERVED_NAME, Scripts, VllmServer

MODEL = SERVED_NAME
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
PROTOCOLS: list[Protocol] = ["chat", "messages", "responses"]


@pytest.fixture(scope="module")
def frontend() -> dr.Frontend:
    return dr.Frontend()


def gateway_for(url: str) -> Any:
    # The context limit is the engine's (--max-model-len): max_tokens is resolved against it.
    # vLLM on a busy CPU can take longer than the default 10 s to answer a request's headers.
    settings = GatewaySettings(
        backend="completions",
        backend_urls=[url],
        context_limit=MAX_MODEL_LEN,
        connect_timeout=120,
        log_requests=False,
        webui=False,
    )
    return create_app(settings)


@pytest.fixture(scope="module")
def gateway(plugin_vllm: VllmServer) -> Iterator[ServerThread]:
    with serving(gateway_for(plugin_vllm.url)) as server:
        yield server


def body_for(protocol: Protocol, prompt: str, **extra: Any) -> dict[str, Any]:
    if protocol == "responses":
        return {"model": MODEL, "input": prompt, **extra}
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": prompt}], **extra}
    if protocol == "messages":
        body.setdefault("max_tokens", 512)
    return body


def script_reply(scripts: Scripts, frontend: dr.Frontend, protocol: Protocol, body: dict[str, Any], text: str) -> int:
    """The engine will answer ``body``'s exact prompt with ``text``; returns the output's length."""
    ids = [*frontend.tokenizer.encode(text), *frontend.stop_token_ids]
    scripts.script(frontend.prepare(protocol, body).prompt_ids.tolist(), ids)
    return len(ids)


def usage_of(protocol: Protocol, response: dict[str, Any]) -> tuple[int, int, int, int]:
    """(prompt, cached, completion, reasoning) tokens as the protocol reports them."""
    usage = response["usage"]
    if protocol == "chat":
        details = usage.get("prompt_tokens_details") or {}
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        return usage["prompt_tokens"], details.get("cached_tokens") or 0, usage["completion_tokens"], reasoning
    if protocol == "responses":
        reasoning = usage["output_tokens_details"]["reasoning_tokens"]
        cached = usage["input_tokens_details"]["cached_tokens"]
        return usage["input_tokens"], cached, usage["output_tokens"], reasoning
    cached = usage.get("cache_read_input_tokens") or 0
    return usage["input_tokens"] + cached, cached, usage["output_tokens"], 0


def reply_text(protocol: Protocol, response: dict[str, Any]) -> tuple[str, str]:
    """(reasoning, content) of a whole response."""
    if protocol == "chat":
        message = response["choices"][0]["message"]
        return message.get("reasoning_content") or "", message.get("content") or ""
    if protocol == "responses":
        reasoning = "".join(
            part["text"]
            for item in response["output"]
            if item["type"] == "reasoning"
            for part in item.get("content") or ()
        )
        content = "".join(
            part["text"] for item in response["output"] if item["type"] == "message" for part in item["content"]
        )
        return reasoning, content
    thinking = "".join(block["thinking"] for block in response["content"] if block["type"] == "thinking")
    text = "".join(block["text"] for block in response["content"] if block["type"] == "text")
    return thinking, text


def final_response(protocol: Protocol, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole response a stream's events add up to (its usage and text)."""
    if protocol == "responses":
        response: dict[str, Any] = events[-1]["response"]
        return response
    if protocol == "chat":
        reasoning = "".join(e["choices"][0]["delta"].get("reasoning_content") or "" for e in events if e["choices"])
        content = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
        usage = next(e["usage"] for e in reversed(events) if e.get("usage"))
        return {"choices": [{"message": {"reasoning_content": reasoning, "content": content}}], "usage": usage}
    start = events[0]["message"]
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    final = next(e for e in events if e["type"] == "message_delta")
    return {
        "content": [
            {"type": "thinking", "thinking": "".join(d.get("thinking", "") for d in deltas)},
            {"type": "text", "text": "".join(d.get("text", "") for d in deltas)},
        ],
        "usage": {**start["usage"], **{k: v for k, v in final["usage"].items() if v is not None}},
    }


def reply(url: str, protocol: Protocol, body: dict[str, Any], stream: bool) -> dict[str, Any]:
    """``body`` sent whole or streamed (Chat then asks for the usage), every event checked against
    the SDK's types; the whole response it adds up to."""
    extra: dict[str, Any] = {"stream": stream}
    if stream and protocol == "chat":
        extra["stream_options"] = {"include_usage": True}
    response = httpx.post(url + PATHS[protocol], json={**body, **extra}, timeout=300)
    assert response.status_code == 200, response.text
    if stream:
        return final_response(protocol, check_stream(protocol, response.content))
    return check_response(protocol, response.content)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_replies_and_usage_that_adds_up(
    gateway: ServerThread, scripts: Scripts, frontend: dr.Frontend, protocol: Protocol, stream: bool
) -> None:
    body = body_for(protocol, f"Reply {protocol} {stream}.")
    reasoning_text, content_text = "Reasoning 東京 🙂 here.", "Content é here."
    length = script_reply(scripts, frontend, protocol, body, f"{reasoning_text}</think>{content_text}")
    whole = reply(gateway.url, protocol, body, stream)
    assert reply_text(protocol, whole) == (reasoning_text, content_text)
    prompt, cached, completion, reasoning = usage_of(protocol, whole)
    assert prompt == len(frontend.prepare(protocol, body).prompt_ids)
    assert cached <= prompt
    assert completion == length - 1 or completion == length  # the end of sentence may be counted
    assert reasoning <= completion
    if protocol != "messages":
        assert reasoning == len(frontend.tokenizer.encode(reasoning_text))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_usage_of_a_random_reply_adds_up(gateway: ServerThread, frontend: dr.Frontend, protocol: Protocol) -> None:
    """Unscripted, the model writes random ids; re-encoding the reasoning text they decode to can
    take more tokens than the model wrote, so the count must come from the ids themselves."""
    limits = {"messages": {"max_tokens": 48}, "responses": {"max_output_tokens": 48}}
    for attempt in range(3):
        body = {**body_for(protocol, f"Say anything {attempt}."), **limits.get(protocol, {"max_tokens": 48})}
        response = httpx.post(gateway.url + PATHS[protocol], json=body, timeout=300)
        whole = check_response(protocol, response.content)
        _, _, completion, reasoning = usage_of(protocol, whole)
        assert 0 < completion <= 48
        assert reasoning <= completion


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cached_prompt_tokens_are_reported(
    gateway: ServerThread, scripts: Scripts, frontend: dr.Frontend, protocol: Protocol
) -> None:
    """vLLM (``--enable-prompt-tokens-details``) reports its prefix-cache hits; a repeated long
    prompt hits."""
    body = body_for(protocol, "Cache me. " + "The same long context. " * 80 + protocol)
    script_reply(scripts, frontend, protocol, body, "Yes.</think>Cached.")
    for _ in range(2):
        response = httpx.post(gateway.url + PATHS[protocol], json=body, timeout=300)
        whole = check_response(protocol, response.content)
    prompt, cached, _, _ = usage_of(protocol, whole)
    assert 0 < cached <= prompt


# Every value from a closed set: whatever a random model picks, the grammar ends the JSON soon.
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("protocol", ["chat", "responses"])
def test_structured_output_is_enforced_by_vllm(gateway: ServerThread, protocol: Protocol) -> None:
    """No script: the random model writes whatever vLLM's grammar lets it, which must be the schema."""
    if protocol == "chat":
        body = body_for(
            protocol,
            "An answer as JSON.",
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
            },
            thinking={"type": "disabled"},
            max_tokens=200,
        )
    else:
        body = body_for(
            protocol,
            "An answer as JSON.",
            text={"format": {"type": "json_schema", "name": "answer", "schema": SCHEMA, "strict": True}},
            reasoning={"effort": "none"},
            max_output_tokens=200,
        )
    response = httpx.post(gateway.url + PATHS[protocol], json=body, timeout=300)
    whole = check_response(protocol, response.content)
    value = json.loads(reply_text(protocol, whole)[1])
    assert set(value) == {"answer", "sure"} and value["answer"] in ("yes", "no") and isinstance(value["sure"], bool)


def script_endless(scripts: Scripts, frontend: dr.Frontend, protocol: Protocol, body: dict[str, Any]) -> None:
    """The engine answers ``body``'s prompt with one token over and over, never the end of
    sentence: the request runs until its ``max_tokens`` (minutes here) unless it is aborted."""
    scripts.script(frontend.prepare(protocol, body).prompt_ids.tolist(), frontend.tokenizer.encode(" on"))


def test_a_background_response_is_polled_to_its_end_and_a_cancel_aborts_vllm(
    gateway: ServerThread, plugin_vllm: VllmServer, scripts: Scripts, frontend: dr.Frontend
) -> None:
    """A background Responses request is answered queued and polled until vLLM's scripted
    reply is complete (and stored); another, endless one, is cancelled once vLLM generates it,
    and vLLM falls idle far short of its max_output_tokens: the cancel aborted its request."""
    body = body_for("responses", "Answer in the background.")
    text = "Done in the background."
    script_reply(scripts, frontend, "responses", body, f"Thinking.</think>{text}")
    started = httpx.post(gateway.url + PATHS["responses"], json={**body, "background": True}, timeout=300)
    assert started.status_code == 200, started.text
    queued = check_response("responses", started.content)
    assert queued["status"] == "queued" and queued["background"] is True
    url = f"{gateway.url}/v1/responses/{queued['id']}"
    assert settle(lambda: httpx.get(url, timeout=30).json()["status"] == "completed", timeout=300)
    done = check_response("responses", httpx.get(url, timeout=30).content)
    assert reply_text("responses", done) == ("Thinking.", text)

    assert settle(plugin_vllm.idle, timeout=120)
    start = plugin_vllm.generated_tokens()
    limit = 12_000
    endless = {**body_for("responses", "Go on forever in the background."), "max_output_tokens": limit}
    script_endless(scripts, frontend, "responses", endless)
    started = httpx.post(gateway.url + PATHS["responses"], json={**endless, "background": True}, timeout=300)
    response_id = started.json()["id"]
    assert settle(lambda: plugin_vllm.generated_tokens() > start, timeout=300), "vLLM never started it"
    cancelled = httpx.post(f"{gateway.url}/v1/responses/{response_id}/cancel", timeout=30)
    assert cancelled.status_code == 200 and check_response("responses", cancelled.content)["status"] == "cancelled"
    assert settle(plugin_vllm.idle, timeout=60)
    assert plugin_vllm.generated_tokens() - start < limit


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_client_that_leaves_ends_the_engine_request(
    gateway: ServerThread, plugin_vllm: VllmServer, scripts: Scripts, frontend: dr.Frontend, protocol: Protocol
) -> None:
    """The model writes one token over and over, never the end of sentence, until max_tokens
    (minutes here). The gateway answers a streamed request's headers once vLLM has accepted it,
    so vLLM is generating when the client, having read them, goes away. The scripted request
    can end only by its length or by an abort: vLLM falling idle short of max_tokens shows
    that the gateway aborted it.

    The client leaves at the headers, not at the first output: on this 2-core machine, with
    the other core busy, the first output was seen to reach the client up to 69 s late (vLLM
    pins its worker to one core; the gateway, vLLM's API server and the client share the
    other), by when the request could have run to its end. vLLM's finished-request counts
    are no witness either: an aborted request is in none of them."""
    assert settle(plugin_vllm.idle, timeout=120)
    start, log_start = plugin_vllm.generated_tokens(), plugin_vllm.log_size()
    limit = 12_000
    limits = {"messages": {"max_tokens": limit}, "responses": {"max_output_tokens": limit}}
    body = {**body_for(protocol, f"Go on forever {protocol}."), **limits.get(protocol, {"max_tokens": limit})}
    script_endless(scripts, frontend, protocol, body)
    with httpx.stream("POST", gateway.url + PATHS[protocol], json={**body, "stream": True}, timeout=300) as response:
        assert response.status_code == 200
    left = plugin_vllm.generated_tokens()
    idle = settle(plugin_vllm.idle, timeout=60)
    end = plugin_vllm.generated_tokens()
    seen = f"tokens generated: {start} at the start, {left} when the client left, {end} at the end"
    assert idle and end - start < limit, f"{seen}\n{plugin_vllm.log_since(log_start)}"


def test_vllm_killed_mid_stream_gives_each_protocol_its_error(
    tiny_model: Path, scripts: Scripts, workdir: Path, frontend: dr.Frontend
) -> None:
    server = VllmServer(tiny_model, scripts, workdir / "doomed.log").wait_ready()
    try:
        with serving(gateway_for(server.url)) as gw:
            outcomes: dict[str, bytes] = {}
            streaming = {protocol: threading.Event() for protocol in PROTOCOLS}

            def stream(protocol: Protocol, body: dict[str, Any]) -> None:
                raw = bytearray()
                with httpx.stream("POST", gw.url + PATHS[protocol], json=body, timeout=300) as response:
                    for chunk in response.iter_raw():
                        raw += chunk
                        if b'"delta"' in raw:
                            streaming[protocol].set()
                outcomes[protocol] = bytes(raw)

            threads = []
            for protocol in PROTOCOLS:
                limit = {"messages": {"max_tokens": 8000}, "responses": {"max_output_tokens": 8000}}.get(
                    protocol, {"max_tokens": 8000}
                )
                body = {**body_for(protocol, f"Long {protocol}."), **limit}
                script_endless(scripts, frontend, protocol, body)
                threads.append(threading.Thread(target=stream, args=(protocol, {**body, "stream": True})))
            for thread in threads:
                thread.start()
            assert all(streaming[protocol].wait(300) for protocol in PROTOCOLS)
            server.kill()
            for thread in threads:
                thread.join(120)
        for protocol in PROTOCOLS:
            raw = outcomes[protocol]
            name, data = parse_sse(raw)[-1]
            if protocol == "chat":
                assert name is None and json.loads(data)["error"]["code"] in ("backend_error", "backend_unavailable")
                check_stream("chat", raw.rsplit(b"data: ", 1)[0] + b"data: [DONE]\n\n")
            else:
                assert name == "error" and json.loads(data)["type"] == "error"
                check_stream(protocol, raw.rsplit(b"event: error", 1)[0])
    finally:
        server.kill()


ChoicesReply = tuple[dict[int, str], dict[int, list[dict[str, Any]]], dict[str, Any]]


def two_choices(
    url: str, scripts: Scripts, frontend: dr.Frontend, prompt: str, output: str, stream: bool, **extra: Any
) -> ChoicesReply:
    """A Chat request for two samples of ``prompt`` (each scripted to write ``output``: ``n``
    leaves the prompt alone), whole or streamed: each choice's content and log probability
    entries by index, and the usage."""
    body = body_for("chat", prompt, max_tokens=64, **extra)
    script_reply(scripts, frontend, "chat", body, output)
    body["n"] = 2
    more = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    response = httpx.post(url + PATHS["chat"], json={**body, **more}, timeout=300)
    assert response.status_code == 200, response.text
    if stream:
        events = check_stream("chat", response.content)
        choices = {i: chat_stream_choice(events, i) for i in (0, 1)}
        return {i: c[0] for i, c in choices.items()}, {i: c[1] for i, c in choices.items()}, events[-1]["usage"]
    whole = check_response("chat", response.content)
    content = {c["index"]: c["message"]["content"] for c in whole["choices"]}
    entries = {c["index"]: (c.get("logprobs") or {}).get("content") or [] for c in whole["choices"]}
    return content, entries, whole["usage"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_several_choices_from_vllm(
    gateway: ServerThread, scripts: Scripts, frontend: dr.Frontend, stream: bool
) -> None:
    """``n`` samples from vLLM, each its own choice (every sample of the prompt writes the script)."""
    output = "Same thought.</think>Same answer."
    content, _, usage = two_choices(gateway.url, scripts, frontend, f"Two answers {stream}.", output, stream)
    assert content == {0: "Same answer.", 1: "Same answer."}
    assert usage["completion_tokens"] >= 2 * len(frontend.tokenizer.encode(output))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_log_probabilities_from_vllm(
    gateway: ServerThread, scripts: Scripts, frontend: dr.Frontend, stream: bool
) -> None:
    """vLLM's log probabilities (as token ids) come back in Chat's and Responses' shapes: one entry
    per content token, with the asked-for alternatives. (vLLM reports the model's own
    distribution, before logits processors: the scripted token is not made sure there.)"""
    answer = "Forty two."
    asks: list[tuple[Protocol, dict[str, Any]]] = [
        ("chat", {"logprobs": True, "top_logprobs": 2}),
        ("responses", {"top_logprobs": 2}),
    ]
    for protocol, extra in asks:
        body = body_for(protocol, f"Log probabilities {protocol} {stream}.", **extra)
        script_reply(scripts, frontend, protocol, body, f"Think.</think>{answer}")
        response = httpx.post(gateway.url + PATHS[protocol], json={**body, "stream": stream}, timeout=300)
        assert response.status_code == 200, response.text
        if protocol == "chat":
            if stream:
                entries = [
                    entry
                    for event in check_stream("chat", response.content)
                    for choice in event["choices"]
                    for entry in ((choice.get("logprobs") or {}).get("content") or [])
                ]
            else:
                entries = check_response("chat", response.content)["choices"][0]["logprobs"]["content"]
        elif stream:
            events = check_stream("responses", response.content)
            entries = [lp for e in events if e["type"] == "response.output_text.delta" for lp in e["logprobs"]]
        else:
            output = check_response("responses", response.content)["output"]
            entries = [lp for i in output if i["type"] == "message" for p in i["content"] for lp in p["logprobs"]]
        assert "".join(entry["token"] for entry in entries) == answer
        for entry in entries:
            assert entry["logprob"] <= 0
            assert len(entry["top_logprobs"]) == 2
            assert all(alternative["logprob"] <= 0 for alternative in entry["top_logprobs"])
