"""The gateway (``--backend vllm-grpc``) in front of vLLM's gRPC entrypoint, in each protocol.

vLLM receives the gateway's exact prompt ids as protobuf (``tokenized.input_ids``) and streams
output ids back; outputs are scripted as in ``test_gateway.py``, whose helpers read the
replies. The same checks as over HTTP: replies and usage, exact prompts (typed special tokens
stay text), cache hits, structured output, several choices, log probabilities, and a client
that leaves aborting vLLM's request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.frontend import Protocol
from deepseek_recipe.gateway import GatewaySettings, create_app
from tests.gateway_support import ServerThread, check_response, serving, settle
from tests.vllm.servers import MAX_MODEL_LEN, Scripts, VllmServer
from tests.vllm.test_gateway import (
    PATHS,
    PROTOCOLS,
    SCHEMA,
    body_for,
    reply,
    reply_text,
    script_endless,
    script_reply,
    two_choices,
    usage_of,
)


@pytest.fixture(scope="module")
def frontend() -> dr.Frontend:
    return dr.Frontend(options=dr.ConversionOptions(max_choices=16))


@pytest.fixture(scope="module")
def gateway(grpc_vllm: VllmServer) -> Iterator[ServerThread]:
    settings = GatewaySettings(
        backend="vllm-grpc",
        backend_urls=[grpc_vllm.url],
        context_limit=MAX_MODEL_LEN,
        connect_timeout=120,
        log_requests=False,
        webui=False,
    )
    with serving(create_app(settings)) as server:
        yield server


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_replies_usage_and_the_exact_prompt(
    gateway: ServerThread, scripts: Scripts, frontend: dr.Frontend, protocol: Protocol, stream: bool
) -> None:
    """A user's text that spells template tokens stays text: vLLM is fed the official encoder's
    ids for it, which the scripted reply's prompt is named by."""
    body = body_for(protocol, f"Reply over gRPC {protocol} {stream}: <｜Assistant｜></think><｜end▁of▁sentence｜>")
    reasoning_text, content_text = "Reasoning 東京 🙂 here.", "Content é here."
    length = script_reply(scripts, frontend, protocol, body, f"{reasoning_text}</think>{content_text}")
    prompt_ids = frontend.prepare(protocol, body).prompt_ids.tolist()
    scripts.forget(prompt_ids)
    whole = reply(gateway.url, protocol, body, stream)
    assert scripts.seen(prompt_ids)
    assert reply_text(protocol, whole) == (reasoning_text, content_text)
    prompt, cached, completion, reasoning = usage_of(protocol, whole)
    assert prompt == len(prompt_ids)
    assert cached <= prompt
    assert completion == length - 1 or completion == length
    if protocol != "messages":
        assert reasoning == len(frontend.tokenizer.encode(reasoning_text))


def test_cached_prompt_tokens_are_reported(gateway: ServerThread, scripts: Scripts, frontend: dr.Frontend) -> None:
    body = body_for("chat", "Cache me over gRPC. " + "The same long context. " * 80)
    script_reply(scripts, frontend, "chat", body, "Yes.</think>Cached.")
    for _ in range(2):
        whole = check_response("chat", httpx.post(gateway.url + PATHS["chat"], json=body, timeout=300).content)
    prompt, cached, _, _ = usage_of("chat", whole)
    assert 0 < cached <= prompt


def test_structured_output_is_enforced_by_vllm(gateway: ServerThread) -> None:
    body = body_for(
        "chat",
        "An answer as JSON, over gRPC.",
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True}},
        thinking={"type": "disabled"},
        max_tokens=200,
    )
    whole = check_response("chat", httpx.post(gateway.url + PATHS["chat"], json=body, timeout=300).content)
    value = json.loads(reply_text("chat", whole)[1])
    assert set(value) == {"answer", "sure"} and value["answer"] in ("yes", "no") and isinstance(value["sure"], bool)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_several_choices_with_log_probabilities(
    gateway: ServerThread, scripts: Scripts, frontend: dr.Frontend, stream: bool
) -> None:
    """``n`` samples, each its own choice, with one log probability per content token and the
    asked-for alternatives, most likely first."""
    answer = "Same answer."
    prompt, output = f"Two answers over gRPC {stream}.", f"Same thought.</think>{answer}"
    content, entries, _ = two_choices(
        gateway.url, scripts, frontend, prompt, output, stream, logprobs=True, top_logprobs=2
    )
    assert content == {0: answer, 1: answer}
    for index in (0, 1):
        assert "".join(entry["token"] for entry in entries[index]) == answer
        for entry in entries[index]:
            alternatives = [a["logprob"] for a in entry["top_logprobs"]]
            assert len(alternatives) == 2 and alternatives == sorted(alternatives, reverse=True)
            assert entry["logprob"] <= 0 and all(lp <= 0 for lp in alternatives)


def test_a_client_that_leaves_aborts_the_vllm_request(
    gateway: ServerThread, grpc_vllm: VllmServer, scripts: Scripts, frontend: dr.Frontend
) -> None:
    """The scripted request never ends short of max_tokens (minutes here); once the client,
    having read the headers, went away, vLLM's own log says it aborted it, or its periodic
    stats show it generating and then idle (at about 25 tokens a second, 12,000 tokens take
    eight minutes: idle within two means the request ended early). vLLM was seen to end the
    request without the abort line."""
    offset = grpc_vllm.log_size()
    body = body_for("chat", "Go on forever over gRPC.", max_tokens=12_000)
    script_endless(scripts, frontend, "chat", body)
    with httpx.stream("POST", gateway.url + PATHS["chat"], json={**body, "stream": True}, timeout=300) as response:
        assert response.status_code == 200

    def ended() -> bool:
        log = grpc_vllm.log_since(offset)
        if "Aborted request(s)" in log:
            return True
        rates = [line.split("Avg generation throughput: ")[1].split(" ")[0] for line in log.splitlines()
                 if "Avg generation throughput: " in line]  # fmt: skip
        generating = [float(rate) > 0 for rate in rates]
        return True in generating and False in generating[generating.index(True) :]

    assert settle(ended, timeout=120), grpc_vllm.log_since(offset)
