"""The routing simulator (``bench/route_sim.py``) runs, drives the library's routers, and the
prefix router keeps far more of the cache than the prefix-blind policies."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SIMULATOR = Path(__file__).resolve().parents[1] / "bench" / "route_sim.py"


@pytest.fixture(scope="module")
def route_sim() -> ModuleType:
    spec = importlib.util.spec_from_file_location("route_sim", SIMULATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_small_run(route_sim: ModuleType) -> None:
    knobs = route_sim.Knobs(replicas=8, gateways=2, seconds=200.0, warmup=60.0)
    agents, sessions = route_sim.make_workload(knobs)
    assert len(sessions) > 50
    results = {p: route_sim.simulate(p, knobs, agents, sessions) for p in route_sim.POLICIES}
    assert all(r.requests > 300 for r in results.values())
    assert all(0 < r.hit_rate < 1 and r.imbalance >= 1 for r in results.values())
    prefix, oracle = results["prefix"], results["oracle"]
    for blind in ("round_robin", "least_loaded"):
        assert prefix.hit_rate > results[blind].hit_rate + 0.1
    assert prefix.hit_rate >= 0.9 * oracle.hit_rate
    table = route_sim.table(list(results.values()))
    assert table.count("\n") == 5 and "| 8 | prefix |" in table
    assert route_sim.verdict(list(results.values()))[0].startswith("8 replicas: router hit rate")


def test_the_prompts_grow_and_drop_reasoning_at_user_turns(route_sim: ModuleType) -> None:
    knobs = route_sim.Knobs(replicas=4, seconds=100.0)
    agents, sessions = route_sim.make_workload(knobs)
    session = next(s for s in sessions if any(t.user for t in s.turns[:-1]) and len(s.turns) > 3)
    conversation = route_sim.Conversation(agents[session.agent], session)
    previous = conversation.prompt()
    assert previous[: len(agents[session.agent].head)] == agents[session.agent].head
    for turn in session.turns[:-1]:
        had_reasoning = any(droppable for _, droppable in conversation.segments)
        conversation.advance(turn)
        prompt = conversation.prompt()
        if turn.user and had_reasoning:  # earlier reasoning is gone: the prompt diverges
            assert prompt[: len(previous)] != previous
        else:
            assert prompt[: len(previous)] == previous and len(prompt) > len(previous)
        previous = prompt
