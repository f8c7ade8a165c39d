"""Cache-aware routing: the policies alone, then gateways in front of several small real engines
on loopback (``tests/fake_engines.py``), one of them in two separate processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest

import deepseek_recipe as dr
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.backends.pool import BackendPool, head_token
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.routing import LeastLoaded, PrefixRouter, PromptBlocks, RoundRobin, make_router
from tests.fake_engines import FakeEngine
from tests.gateway_support import ServerThread, serving, settle
from tests.ports import free_port

MODEL = "DeepSeek-V4-Pro"
NAMES = [f"http://10.0.0.{k}:8000" for k in range(1, 9)]


def blocks(ids: list[int], head: int | None = None) -> PromptBlocks:
    return PromptBlocks.of(ids, block_size=4, head_token=head)


# -- the policies ------------------------------------------------------------------------------


def test_prompt_blocks_read_the_head() -> None:
    ids = [0, 5, 5, 5, 5, 5, 9, 7, 7, 7, 7, 7, 7]
    with_head = blocks(ids, head=9)
    assert with_head.head_tokens == 7 and with_head.tokens == 13
    assert with_head.key == dr.prefix_hash(ids, 7, 4)
    assert with_head.hashes == dr.block_hashes(ids, 4)
    # Every turn of a conversation has the same head, so the same key.
    assert blocks(ids + [1, 2, 3, 4, 5], head=9).key == with_head.key
    assert blocks(ids, head=None).head_tokens == 4  # no head token: the first block
    assert blocks(ids, head=42).head_tokens == 4  # absent: the first block
    assert blocks([1, 2], head=None).head_tokens == 2


def test_rendezvous_is_the_same_in_every_process_whatever_the_order_of_names() -> None:
    a, b = PrefixRouter(NAMES), PrefixRouter(list(reversed(NAMES)))
    for key in range(200):
        first_a = NAMES[a.rendezvous(key, range(len(NAMES)))[0]]
        first_b = list(reversed(NAMES))[b.rendezvous(key, range(len(NAMES)))[0]]
        assert first_a == first_b
    # Keys spread over every replica, and a replica going away moves only its own keys.
    firsts = [a.rendezvous(key, range(8))[0] for key in range(2_000)]
    assert all(150 < firsts.count(r) < 350 for r in range(8))
    without_3 = [a.rendezvous(key, [r for r in range(8) if r != 3])[0] for key in range(2_000)]
    assert all(before == after for before, after in zip(firsts, without_3) if before != 3)


def test_bounded_load_spills_to_the_next_in_rendezvous_order() -> None:
    router = PrefixRouter(NAMES[:4], load_factor=1.25)
    request = blocks([1, 2, 3, 4, 5, 6, 7, 8, 9], head=None)
    ranked = router.rendezvous(request.key, range(4))
    idle = [0, 0, 0, 0]
    assert router.route(request, idle, range(4)).order[0] == ranked[0]
    assert router.route(request, idle, range(4)).reason == "affinity"
    # 8 in flight, the preferred replica has 5 of them: over its share, ceil(1.25 x 9 / 4) = 3.
    loads = [0, 0, 0, 0]
    loads[ranked[0]], loads[ranked[1]], loads[ranked[2]] = 5, 1, 2
    route = router.route(request, loads, range(4))
    assert (route.order[0], route.reason) == (ranked[1], "spilled")
    assert sorted(route.order) == [0, 1, 2, 3]
    # At its share it still takes the request (one of headroom).
    loads[ranked[0]], loads[ranked[1]] = 3, 3
    assert router.route(request, loads, range(4)).order[0] == ranked[0]
    # Only available replicas are ranked.
    assert router.route(request, idle, [ranked[3]]).order == [ranked[3]]


def test_memory_keeps_a_spilled_conversation_where_its_prefix_is() -> None:
    router = PrefixRouter(NAMES[:4])
    turn1 = [7, 7, 7, 9] + list(range(100, 140))
    first = blocks(turn1, head=9)
    ranked = router.rendezvous(first.key, range(4))
    router.routed(first, ranked[2])  # say it was spilled there
    turn2 = blocks(turn1 + list(range(500, 530)), head=9)
    route = router.route(turn2, [0, 0, 0, 0], range(4))
    assert (route.order[0], route.reason) == (ranked[2], "prefix")
    assert route.prefix_tokens == 44  # the blocks of turn 1 it was sent with
    # Another conversation with the same head but other content is not drawn there.
    other = blocks([7, 7, 7, 9] + list(range(900, 940)), head=9)
    assert router.route(other, [0, 0, 0, 0], range(4)).order[0] == ranked[0]
    # Memory is bounded.
    small = PrefixRouter(NAMES[:4], memory_blocks=3)
    for start in range(0, 400, 40):
        small.routed(blocks([9] + list(range(start, start + 40)), head=9), 1)
    assert len(small._memory) == 3


def test_the_other_policies() -> None:
    turns = RoundRobin()
    assert [turns.route(None, [0, 0, 0], [0, 1, 2]).order[0] for _ in range(4)] == [0, 1, 2, 0]
    least = LeastLoaded()
    assert least.route(None, [3, 0, 2], [0, 1, 2]).order == [1, 2, 0]
    assert isinstance(make_router("prefix", NAMES), PrefixRouter)
    with pytest.raises(ValueError):
        PrefixRouter(NAMES, load_factor=0.5)


def test_routing_settings_are_serve_flags() -> None:
    settings = GatewaySettings(
        _cli_parse_args=["--routing", "least_loaded", "--block-size", "64", "--routing-load-factor", "1.5"],
        _cli_kebab_case=True,
    )  # type: ignore[call-arg]
    assert (settings.routing, settings.block_size, settings.routing_load_factor) == ("least_loaded", 64, 1.5)
    assert GatewaySettings().routing == "prefix" and GatewaySettings().block_size == 128


# -- gateways in front of engines --------------------------------------------------------------


def turn_body(session: int, turns: int) -> dict[str, Any]:
    """Turn ``turns`` of conversation ``session``: a growing agent conversation."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the tools. " * 30},
        {"role": "user", "content": f"Session {session}: fix the failing test in module_{session}.py"},
    ]
    for turn in range(turns):
        messages.append({"role": "assistant", "content": f"Looking at step {turn} of module_{session}. " * 10})
        messages.append({"role": "user", "content": f"Step {turn} output: " + "ok " * 60})
    return {"model": MODEL, "messages": messages, "thinking": {"type": "disabled"}, "max_tokens": 20}


@contextmanager
def engines(tokenizer: dr.Tokenizer, count: int) -> Iterator[tuple[list[FakeEngine], list[ServerThread]]]:
    script = [[id_] for id_ in tokenizer.encode("Done.")]
    fakes = [FakeEngine(tokenizer, script=script) for _ in range(count)]
    with ExitStack() as stack:
        servers = [stack.enter_context(serving(fake)) for fake in fakes]
        yield fakes, servers


def engine_of(fakes: list[FakeEngine], prompt: list[int]) -> int:
    """Which engine received ``prompt`` last."""
    found = [k for k, fake in enumerate(fakes) if any(r["prompt"] == prompt for r in fake.requests)]
    assert len(found) == 1, found
    return found[0]


def expected_replica(frontend: Frontend, urls: list[str], body: dict[str, Any]) -> str:
    """The replica rendezvous hashing picks for ``body`` when all are idle."""
    ids = frontend.prepare("chat", json.dumps(body)).prompt_ids
    request = PromptBlocks.of(ids, head_token=head_token(frontend))
    router = PrefixRouter(urls)
    return urls[router.rendezvous(request.key, range(len(urls)))[0]]


def prefix_gateway(frontend: Frontend, urls: list[str], **settings: Any) -> Gateway:
    values = {"backend": "completions", "backend_urls": urls, "log_requests": False, **settings}
    return Gateway(settings=GatewaySettings(**values), frontend=frontend)


def test_a_growing_conversation_keeps_landing_on_the_same_replica(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    with engines(tokenizer, 3) as (fakes, servers):
        urls = [server.url for server in servers]
        gateway = prefix_gateway(frontend, urls)
        assert isinstance(gateway.backend, BackendPool)
        with serving(gateway) as server:
            landed: dict[int, set[int]] = {}
            for turns in range(4):
                for session in range(6):
                    body = turn_body(session, turns)
                    response = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)
                    assert response.status_code == 200, response.text
                    prompt = frontend.prepare("chat", json.dumps(body)).prompt_ids.tolist()
                    landed.setdefault(session, set()).add(engine_of(fakes, prompt))
            metrics = httpx.get(server.url + "/metrics").text
    assert all(len(replicas) == 1 for replicas in landed.values()), landed
    for session, (replica,) in landed.items():
        assert urls[replica] == expected_replica(frontend, urls, turn_body(session, 0))
    # Turns after the first were found in this process's memory of prefixes.
    used = urls[next(iter(landed[0]))]
    assert f'deepseek_recipe:replica_requests_total{{replica="{used}",route="prefix"}}' in metrics
    assert f'deepseek_recipe:replica_routed_prefix_tokens_total{{replica="{used}"}}' in metrics
    assert f'deepseek_recipe:replica_num_requests_running{{replica="{used}"}} 0.0' in metrics


def test_a_replica_that_dies_mid_stream_is_avoided_then_retried(frontend: Frontend, tokenizer: dr.Tokenizer) -> None:
    now = [0.0]  # the pool's clock: rests end when the test says so, however slow the machine
    with engines(tokenizer, 3) as (fakes, servers):
        urls = [server.url for server in servers]
        pool = BackendPool(
            [CompletionsBackend(url) for url in urls],
            router=PrefixRouter(urls),
            names=urls,
            head_token=head_token(frontend),
            cooldown=2.0,
            clock=lambda: now[0],
        )
        gateway = Gateway(settings=GatewaySettings(log_requests=False), frontend=frontend, backend=pool)
        with serving(gateway) as server:

            def chat(body: dict[str, Any]) -> httpx.Response:
                return httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)

            assert chat(turn_body(0, 0)).status_code == 200
            home = urls.index(expected_replica(frontend, urls, turn_body(0, 0)))
            fakes[home].behaviour = "die"  # its stream breaks after the first chunk
            fakes[home].script = fakes[home].script * 3
            broken = chat(turn_body(0, 1))
            assert broken.status_code == 502
            received = len(fakes[home].requests)
            # The next requests, of this conversation and of others, go elsewhere and succeed.
            for session in range(6):
                assert chat(turn_body(session, 1)).status_code == 200
            assert len(fakes[home].requests) == received
            metrics = httpx.get(server.url + "/metrics").text
            assert f'deepseek_recipe:replica_failures_total{{kind="closed",replica="{urls[home]}"}} 1.0' in metrics
            # Once rested, it is tried again: a new conversation whose head hashes to it goes there.
            fakes[home].behaviour = "normal"
            now[0] += 2.5
            fresh = next(
                turn_body(session, 0)
                for session in range(100, 200)
                if expected_replica(frontend, urls, turn_body(session, 0)) == urls[home]
            )
            assert chat(fresh).status_code == 200
            assert len(fakes[home].requests) == received + 1


@contextmanager
def gateway_process(urls: list[str]) -> Iterator[str]:
    """``deepseek-recipe serve`` in a process of its own, in front of ``urls``."""
    port = free_port()
    command = [sys.executable, "-m", "deepseek_recipe", "serve", "--backend", "completions"]
    command += ["--backend-urls", ",".join(urls), "--port", str(port), "--log-requests", "false"]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=dict(os.environ))
        url = f"http://127.0.0.1:{port}"
        try:
            ready = settle(lambda: _healthy(url) or process.poll() is not None, timeout=60)
            if not ready or process.poll() is not None:
                log.seek(0)
                pytest.fail("the gateway did not start: " + log.read().decode(errors="replace")[-2000:])
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_two_gateway_processes_route_a_conversation_to_the_same_replica(
    frontend: Frontend, tokenizer: dr.Tokenizer
) -> None:
    with engines(tokenizer, 3) as (fakes, servers):
        urls = [server.url for server in servers]
        # The two processes list the replicas in different orders: routing goes by name.
        with gateway_process(urls) as first, gateway_process(urls[::-1]) as second:
            landed: dict[int, set[int]] = {}
            for turns in range(4):
                for session in range(5):
                    body = turn_body(session, turns)
                    gateway = (first, second)[(session + turns) % 2]  # turns alternate between them
                    response = httpx.post(gateway + "/v1/chat/completions", json=body, timeout=30)
                    assert response.status_code == 200, response.text
                    prompt = frontend.prepare("chat", json.dumps(body)).prompt_ids.tolist()
                    landed.setdefault(session, set()).add(engine_of(fakes, prompt))
    assert all(len(replicas) == 1 for replicas in landed.values()), landed
    for session, (replica,) in landed.items():
        assert urls[replica] == expected_replica(frontend, urls, turn_body(session, 0))


@pytest.fixture(scope="module")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)
