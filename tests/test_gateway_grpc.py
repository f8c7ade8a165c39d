"""The gRPC backends (vllm-grpc, sglang-grpc) against a real gRPC engine on loopback speaking
each engine's service (``tests/grpc_engine.py``): the request each writes (the exact prompt ids
as protobuf, the sampling settings), how they read the engine's stream in each protocol, and
their failures (``tests/vllm`` runs vllm-grpc against a real vLLM; no SGLang runs here)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from smg_grpc_proto import sglang_scheduler_pb2
from smg_grpc_proto import vllm_engine_pb2 as pb

import deepseek_recipe as dr
from deepseek_recipe._native import TokenIds
from deepseek_recipe.backends._grpc import GrpcBackend
from deepseek_recipe.backends.pool import BackendPool
from deepseek_recipe.backends.sglang_grpc import SglangGrpcBackend
from deepseek_recipe.backends.vllm_grpc import VllmGrpcBackend, int32_seed, logprobs_to_ask
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings, create_app
from tests.gateway_support import (
    chat_stream_choice,
    check_response,
    check_stream,
    leave_a_stream,
    parse_sse,
    serving,
    settle,
)
from tests.grpc_engine import SECRET, FakeGrpcEngine, GrpcServer, grpc_serving, logprob_of
from tests.test_gateway_backends import MODEL, OUTPUT, SAMPLING, chat, script
from tests.test_gateway_faults import PATHS, assert_error_shape, body_for


@pytest.fixture(scope="session")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    # As the gateway's settings make it (max_choices 16).
    return Frontend(tokenizer, options=dr.ConversionOptions(max_choices=16))


BACKENDS: dict[str, type[GrpcBackend]] = {"vllm": VllmGrpcBackend, "sglang": SglangGrpcBackend}


@pytest.fixture(params=sorted(BACKENDS))
def engine(tokenizer: dr.Tokenizer, request: pytest.FixtureRequest) -> Iterator[tuple[FakeGrpcEngine, GrpcServer]]:
    fake = FakeGrpcEngine(script=script(tokenizer, per_chunk=2), kind=request.param)
    with grpc_serving(fake) as server:
        yield fake, server


def gateway_for(frontend: Frontend, target: str, kind: str = "vllm", **settings: Any) -> Gateway:
    backend = BACKENDS[kind](target, connect_timeout=settings.pop("connect_timeout", 10.0))
    return Gateway(settings=GatewaySettings(log_requests=False, **settings), frontend=frontend, backend=backend)


def test_the_request_carries_the_exact_ids_and_settings(
    frontend: Frontend, engine: tuple[FakeGrpcEngine, GrpcServer]
) -> None:
    fake, server = engine
    fake.script = script(frontend.tokenizer, "The answer is 42 🦀.")
    settings = SAMPLING
    with serving(gateway_for(frontend, server.target, server.kind)) as gateway:
        response = chat(gateway.url, **settings)
    assert response.status_code == 200, response.text
    sent = fake.requests[-1]
    body = {"model": MODEL, "messages": [{"role": "user", "content": "What is 6 x 7?"}], "stream": False, **settings}
    assert list(sent.tokenized.input_ids) == frontend.prepare("chat", json.dumps(body)).prompt_ids
    params = sent.sampling_params
    assert params.n == 1 and params.WhichOneof("constraint") is None
    assert params.temperature == pytest.approx(0.25) and params.top_p == pytest.approx(0.5)
    assert list(params.stop_token_ids) == [1] and params.skip_special_tokens is False
    assert not params.stop  # stop sequences are matched on parsed content, by the gateway
    if fake.kind == "vllm":
        assert params.max_tokens == 77 and params.seed == 7 and not params.HasField("logprobs")
        assert sent.WhichOneof("input") == "tokenized"
    else:
        # SGLang's proto has no seed; its servicer takes a zero as a value, not as unset.
        assert params.max_new_tokens == 77 and params.top_k == -1 and params.repetition_penalty == 1.0
        assert sent.return_logprob is False and sent.HasField("tokenized")
    assert sent.stream is True and sent.request_id
    # The ids, not the engine's tokenizer: no text goes along.
    assert not sent.tokenized.original_text
    message = check_response("chat", response.content)["choices"][0]["message"]
    assert message["content"] == "The answer is 42 🦀."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_each_protocol_reads_the_engine_stream(
    frontend: Frontend, engine: tuple[FakeGrpcEngine, GrpcServer], protocol: str, stream: bool
) -> None:
    """Chunks, then a ``complete`` that repeats the last chunk's ids: the reply has each id
    once, and the usage the engine's prompt and cache counts."""
    fake, server = engine
    fake.cached_tokens = 5
    body = body_for(protocol, stream=stream)
    if stream and protocol == "chat":
        body["stream_options"] = {"include_usage": True}
    with serving(gateway_for(frontend, server.target, server.kind)) as gateway:
        response = httpx.post(gateway.url + PATHS[protocol], json=body, timeout=30)
    assert response.status_code == 200, response.text
    prompt = len(fake.requests[-1].tokenized.input_ids)
    if protocol == "chat":
        if stream:
            events = check_stream("chat", response.content)
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
            thought = "".join(e["choices"][0]["delta"].get("reasoning_content") or "" for e in events if e["choices"])
            usage = events[-1]["usage"]
        else:
            whole = check_response("chat", response.content)
            thought, text = (
                whole["choices"][0]["message"]["reasoning_content"],
                whole["choices"][0]["message"]["content"],
            )
            usage = whole["usage"]
        assert (thought, text) == ("Let me think.", "The answer is 42 🦀.")
        assert usage["prompt_tokens"] == prompt and usage["prompt_tokens_details"]["cached_tokens"] == 5
        assert usage["completion_tokens"] == len(frontend.tokenizer.encode(OUTPUT))
    elif protocol == "responses":
        whole = (
            check_stream("responses", response.content)[-1]["response"]
            if stream
            else check_response("responses", response.content)
        )
        texts = [p["text"] for i in whole["output"] if i["type"] == "message" for p in i["content"]]
        assert texts == ["The answer is 42 🦀."]
        assert whole["usage"]["input_tokens"] == prompt
        assert whole["usage"]["input_tokens_details"]["cached_tokens"] == 5
    else:
        if stream:
            events = check_stream("messages", response.content)
            text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
            usage = next(e for e in events if e["type"] == "message_delta")["usage"]
        else:
            whole = check_response("messages", response.content)
            text = "".join(b["text"] for b in whole["content"] if b["type"] == "text")
            usage = whole["usage"]
        assert text == "The answer is 42 🦀."
        assert usage["cache_read_input_tokens"] == 5


def test_a_growing_conversation_sends_each_turn_whole(
    frontend: Frontend, engine: tuple[FakeGrpcEngine, GrpcServer]
) -> None:
    """A long first turn (its varints written off the event loop) and a second that extends it
    (the first turn's varints copied, its own written): the engine gets each prompt's exact ids."""
    fake, server = engine
    first = {"model": MODEL, "messages": [{"role": "user", "content": "many words " * 12_000}]}
    second = {
        **first,
        "messages": [*first["messages"], {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}],
    }
    with serving(gateway_for(frontend, server.target, server.kind)) as gateway:
        for body in (first, second):
            assert httpx.post(gateway.url + "/v1/chat/completions", json=body, timeout=60).status_code == 200
    sent = [list(r.tokenized.input_ids) for r in fake.requests]
    expected = [frontend.prepare("chat", json.dumps(body)).prompt_ids for body in (first, second)]
    assert len(expected[0]) > 16_384
    assert sent == expected


def test_protobuf_between_writes_a_packed_field_any_message_reads(frontend: Frontend) -> None:
    head = pb.GenerateRequest(request_id="r", stream=True, sampling_params=pb.SamplingParams(max_tokens=3))
    tail = pb.GenerateRequest(data_parallel_rank=1).SerializeToString()
    edges = [0, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 2**28, 2**32 - 1]
    first = {"model": MODEL, "messages": [{"role": "user", "content": "words " * 3_000}]}
    second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "a"}]}
    encoded = [frontend.prepare("chat", json.dumps(body)).prompt_ids for body in (first, second)]
    sglang_head = sglang_scheduler_pb2.GenerateRequest(request_id="r", stream=True).SerializeToString()
    for ids in [TokenIds([]), TokenIds(edges), *encoded]:
        data = ids.protobuf_between(head.SerializeToString(), [2, 2], tail)
        request = pb.GenerateRequest.FromString(data)
        assert list(request.tokenized.input_ids) == ids.tolist()
        assert (request.request_id, request.stream, request.sampling_params.max_tokens) == ("r", True, 3)
        assert request.data_parallel_rank == 1
        # SGLang's request keeps its prompt at the same field numbers.
        scheduled = sglang_scheduler_pb2.GenerateRequest.FromString(ids.protobuf_between(sglang_head, [2, 2], b""))
        assert (list(scheduled.tokenized.input_ids), scheduled.request_id) == (ids.tolist(), "r")
    # Deeper and shallower nesting: the ids alone as TokenizedInput's field 2.
    alone = TokenIds(edges).protobuf_between(b"", [2], b"")
    assert list(pb.TokenizedInput.FromString(alone).input_ids) == edges
    # The second turn's varints: its own written now, the first turn's copied.
    assert encoded[1].unwritten_varints() == 0
    for fields in ([], [0], [2**29]):
        with pytest.raises(ValueError, match="field"):
            TokenIds(edges).protobuf_between(b"", fields, b"")


def test_several_choices_and_their_logprobs(frontend: Frontend, engine: tuple[FakeGrpcEngine, GrpcServer]) -> None:
    """``n`` samples, each its own choice; log probabilities with the true top alternatives
    (vLLM's servicer's lists lead with the sampled token: one more is asked for, and the least
    likely dropped)."""
    fake, server = engine
    fake.script = script(frontend.tokenizer, "Forty two.")
    extra: dict[str, Any] = {"n": 2, "logprobs": True, "top_logprobs": 3, "thinking": {"type": "disabled"}}
    with serving(gateway_for(frontend, server.target, server.kind)) as gateway:
        whole = check_response("chat", chat(gateway.url, **extra).content)
        events = check_stream("chat", chat(gateway.url, stream=True, **extra).content)
    sent = fake.requests[-1]
    assert sent.sampling_params.n == 2
    if fake.kind == "vllm":
        assert sent.sampling_params.logprobs == logprobs_to_ask(3) == 4
    else:  # a plain top k; none of the prompt's
        assert (sent.return_logprob, sent.top_logprobs_num, sent.logprob_start_len) == (True, 3, -1)
    ids = frontend.tokenizer.encode("Forty two.")
    streamed = {i: chat_stream_choice(events, i)[1] for i in (0, 1)}
    for choice in whole["choices"]:
        assert choice["message"]["content"] == "Forty two."
        for entries in (choice["logprobs"]["content"], streamed[choice["index"]]):
            assert [e["logprob"] for e in entries] == [logprob_of(i) for i in ids]
            for entry, i in zip(entries, ids):
                alternatives = [a["token"] for a in entry["top_logprobs"]]
                assert alternatives == [frontend.tokenizer.decode([i + k]) for k in (1, 2, 3)]
    assert logprobs_to_ask(0) == 0 and logprobs_to_ask(20) == 20


def test_output_constraints_go_as_the_proto_constraint(
    frontend: Frontend, engine: tuple[FakeGrpcEngine, GrpcServer]
) -> None:
    fake, server = engine
    fake.script = script(frontend.tokenizer, '{"a": 1}')
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with serving(gateway_for(frontend, server.target, server.kind)) as gateway:
        fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
        assert chat(gateway.url, response_format=fmt, thinking={"type": "disabled"}).status_code == 200
        params = fake.requests[-1].sampling_params
        assert params.WhichOneof("constraint") == "json_schema" and json.loads(params.json_schema) == schema
        messages = [{"role": "user", "content": "Reply in json"}]
        body = {"model": MODEL, "messages": messages, "response_format": {"type": "json_object"}}
        assert httpx.post(gateway.url + "/v1/chat/completions", json=body).status_code == 200
        params = fake.requests[-1].sampling_params
        if fake.kind == "vllm":
            assert params.WhichOneof("constraint") == "json_object" and params.json_object is True
        else:  # no json_object in SGLang's proto: any object, as a schema
            assert params.WhichOneof("constraint") == "json_schema" and json.loads(params.json_schema) == {
                "type": "object"
            }


def test_seeds_beyond_32_bits_map_to_the_protos_int32() -> None:
    assert [int32_seed(s) for s in (0, 7, 2**31 - 1, 2**31, 2**32 - 1, 2**32 + 5, -1, -(2**31))] == [
        0,
        7,
        2**31 - 1,
        -(2**31),
        -1,
        5,
        -1,
        -(2**31),
    ]
    assert int32_seed(2**63 - 1) == -1


def test_a_client_that_leaves_cancels_the_engine_call(
    frontend: Frontend, engine: tuple[FakeGrpcEngine, GrpcServer]
) -> None:
    fake, server = engine
    fake.behaviour, fake.interval = "endless", 0.01
    gateway = gateway_for(frontend, server.target, server.kind)
    with serving(gateway) as gateway_http:
        leave_a_stream(gateway_http.url, MODEL)
        assert settle(lambda: fake.cancelled == 1 and fake.active == 0)
        assert settle(lambda: gateway.in_flight == 0)


TIMEOUTS = {"first_token_timeout": 0.6, "idle_timeout": 0.6, "total_timeout": 2.0}
FAULTS: dict[str, tuple[str, int]] = {
    # behaviour: (what the client sees, status of a whole response)
    "reject": ("backend_error", 502),
    "stall": ("backend_timeout", 504),
    "die": ("backend_error", 502),
    "abort": ("backend_error", 502),
    "endless": ("backend_timeout", 504),
    "no_finish": ("backend_error", 502),
}


@pytest.mark.parametrize("kind", sorted(BACKENDS))
@pytest.mark.parametrize("behaviour", sorted(FAULTS))
@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_a_faulty_engine_gives_each_protocol_its_error(
    frontend: Frontend, tokenizer: dr.Tokenizer, behaviour: str, protocol: str, kind: Any
) -> None:
    """Whole and streamed; the engine's own words (which may quote the request) never reach the
    client, and nothing is left running."""
    fake = FakeGrpcEngine(script=[tokenizer.encode("Hi")] * 4, behaviour=behaviour, interval=0.05, kind=kind)  # type: ignore[arg-type]
    code, status = FAULTS[behaviour]
    with grpc_serving(fake) as server:
        gateway = gateway_for(frontend, server.target, kind, keepalive_interval=0.2, **TIMEOUTS)
        with serving(gateway) as gateway_http:
            whole = httpx.post(gateway_http.url + PATHS[protocol], json=body_for(protocol), timeout=30)
            assert SECRET not in assert_error_shape(protocol, whole, status)
            streamed = httpx.post(gateway_http.url + PATHS[protocol], json=body_for(protocol, stream=True), timeout=30)
            assert streamed.status_code == 200 and SECRET.encode() not in streamed.content
            name, data = parse_sse(streamed.content)[-1]
            if protocol == "chat":
                assert name is None and code in data
                check_stream("chat", streamed.content.rsplit(b"data: ", 1)[0] + b"data: [DONE]\n\n")
            else:
                assert (name == "error" and code in data) or (protocol == "messages" and "api_error" in data)
            assert settle(lambda: gateway.in_flight == 0)
            assert settle(lambda: fake.active == 0)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_an_unreachable_engine_is_unavailable_at_once(frontend: Frontend) -> None:
    with serving(gateway_for(frontend, f"grpc://127.0.0.1:{_closed_port()}")) as gateway:
        for protocol in PATHS:
            for stream in (False, True):
                start = time.monotonic()
                response = httpx.post(gateway.url + PATHS[protocol], json=body_for(protocol, stream=stream))
                assert time.monotonic() - start < 5  # refused, not retried until the connect timeout
                assert_error_shape(protocol, response, 503)
        assert httpx.get(gateway.url + "/ready").status_code == 503


def test_an_engine_that_comes_back_is_found_within_a_second_or_so(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    """Requests refused for 12 s, then the engine starts on its port: the gateway reaches it
    within a second or so. gRPC's own reconnect backoff would have grown to 6.5 s (±20%) by
    then, its next attempt usually seconds away."""
    port = _closed_port()
    with serving(gateway_for(frontend, f"grpc://127.0.0.1:{port}")) as gateway:
        refused_until = time.monotonic() + 12
        while time.monotonic() < refused_until:
            assert chat(gateway.url).status_code == 503
            time.sleep(0.2)
        with grpc_serving(FakeGrpcEngine(script=script(tokenizer)), port):
            started = time.monotonic()
            assert settle(lambda: chat(gateway.url).status_code == 200, timeout=20)
            waited = time.monotonic() - started
    assert waited < 2, f"the engine was found {waited:.1f} s after it started"


def test_a_pool_skips_a_dead_grpc_replica(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    fake = FakeGrpcEngine(script=script(tokenizer))
    with grpc_serving(fake) as server:
        pool = BackendPool([VllmGrpcBackend(f"grpc://127.0.0.1:{_closed_port()}"), VllmGrpcBackend(server.target)])
        gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend, backend=pool)
        with serving(gateway) as gateway_http:
            assert [chat(gateway_http.url).status_code for _ in range(4)] == [200] * 4
    assert len(fake.requests) == 4


def test_readiness_follows_the_engines_health_check(
    frontend: Frontend, engine: tuple[FakeGrpcEngine, GrpcServer]
) -> None:
    fake, server = engine
    with serving(gateway_for(frontend, server.target, server.kind)) as gateway:
        assert httpx.get(gateway.url + "/ready").status_code == 200
        fake.healthy = False
        assert httpx.get(gateway.url + "/ready").status_code == 503


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_the_setting_picks_the_backend_and_checks_its_urls(frontend: Frontend, kind: str) -> None:
    backend_class = BACKENDS[kind]
    setting = backend_class.kind
    app = create_app(backend=setting, backend_urls=["grpc://127.0.0.1:50051"], webui=False, log_requests=False)
    assert isinstance(app.backend, backend_class) and app.backend.name == f"{setting} grpc://127.0.0.1:50051"
    for bad in ("http://127.0.0.1:50051", "grpc://", "grpc://host:1/path"):
        with pytest.raises(ValueError, match=f"a {setting} backend URL is grpc://host:port"):
            backend_class(bad)
    for good in ("grpc://[::1]:7", "127.0.0.1:7", "grpcs://engine.example:443", "unix:/tmp/engine.sock"):
        backend_class(good)
    # A URL without a port: the engine's own default (vLLM's gRPC 50051, SGLang's 30000).
    assert backend_class("grpc://engine")._target == f"engine:{backend_class.default_port}"
    assert (VllmGrpcBackend.default_port, SglangGrpcBackend.default_port) == (50051, 30000)


def test_sglang_gets_its_own_defaults_where_a_request_sets_none(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    """SGLang's servicer reads a proto zero as the value: temperature 0 would be greedy and
    top_p 0 nothing at all. A request without them samples as SGLang's own defaults do, and one
    that sets temperature 0 gets greedy decoding; a seed has no field to go in."""
    fake = FakeGrpcEngine(script=script(tokenizer), kind="sglang")
    with grpc_serving(fake) as server, serving(gateway_for(frontend, server.target, "sglang")) as gateway:
        off: dict[str, Any] = {"thinking": {"type": "disabled"}}  # thinking on fixes both at 1.0
        assert chat(gateway.url, **off).status_code == 200
        params = fake.requests[-1].sampling_params
        assert (params.temperature, params.top_p, params.top_k, params.repetition_penalty) == (1.0, 1.0, -1, 1.0)
        assert params.HasField("max_new_tokens") and params.max_new_tokens > 0
        assert chat(gateway.url, temperature=0, seed=3, **off).status_code == 200
        params = fake.requests[-1].sampling_params
        assert (params.temperature, params.top_p) == (0.0, 1.0)
