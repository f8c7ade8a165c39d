"""A sample of the differential table (``scripts/vllm/differential.py``) against vLLM's own
DeepSeek V4 path and the plugin: the plugin never turns a typed special token into a control
token, and its prompts are the official encoder's wherever vLLM carries the request's fields."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.vllm.servers import STOCK_FLAGS, Scripts, VllmServer

pytestmark = pytest.mark.timeout(1800)
ROOT = Path(__file__).resolve().parents[2]


def _differential() -> ModuleType:
    spec = importlib.util.spec_from_file_location("differential", ROOT / "scripts" / "vllm" / "differential.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stock_vllm(tiny_model: Path, scripts: Scripts, workdir: Path) -> Iterator[VllmServer]:
    server = VllmServer(tiny_model, scripts, workdir / "stock.log", STOCK_FLAGS)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def table(stock_vllm: VllmServer, plugin_vllm: VllmServer, scripts: Scripts) -> tuple[list[Any], list[Any]]:
    differential = _differential()
    requests, outputs = differential.sample_cases(40)
    prompts, replies = differential.run({"stock": stock_vllm, "plugin": plugin_vllm}, scripts, requests, outputs)
    print(differential.summary(prompts, replies))
    return prompts, replies


def test_the_plugin_never_makes_a_typed_special_token_a_control_token(table: tuple[list[Any], list[Any]]) -> None:
    prompts, _ = table
    typed = [row for row in prompts if "inject" in row["id"]]
    assert len(typed) >= 20
    assert all(not row["plugin"].get("typed_control_tokens") for row in prompts)
    # The check can fail: vLLM's own path does turn typed spellings into control tokens.
    assert sum(1 for row in prompts if row["stock"].get("typed_control_tokens")) >= 5


def test_plugin_prompts_are_the_official_ones_where_vllm_carries_the_request(
    table: tuple[list[Any], list[Any]],
) -> None:
    prompts, _ = table
    differential = _differential()
    # What vLLM's endpoints do not hand a renderer, or translate on the way (docs/vllm.md): a
    # plugin prompt may differ from the official one for these reasons only.
    not_carried = {
        differential.THINKING,
        differential.SYSTEM_BLOCKS,
        differential.SYSTEM_MESSAGE,
        differential.OUTPUT_CONFIG,
        differential.TEXT_FORMAT,
        differential.CUSTOM_TOOLS,
        differential.CONSECUTIVE,
    }
    compared = [row for row in prompts if row["official"] and row["plugin"]["served"]]
    assert len(compared) >= 40
    differing = {row["id"]: row["plugin"].get("category") for row in compared if not row["plugin"]["equal"]}
    assert set(differing.values()) <= not_carried, differing


def test_plugin_outputs_parse_as_the_official_parser_does(table: tuple[list[Any], list[Any]]) -> None:
    """Reasoning, content and tool calls as the official parser makes of the same ids, except
    where vLLM decides before the parsers run (stop sequences on raw text, tool-call grammar) or
    merges several tokens into one chunk, which only a loaded machine makes it do."""
    _, replies = table
    differential = _differential()
    assert replies
    differing = {row["id"]: row["plugin"].get("category") for row in replies if not row["plugin"].get("equal")}
    assert set(differing.values()) <= {differential.STOP, differential.GRAMMAR, differential.MERGED}, differing
    # Arguments streamed in several deltas are checked where vLLM sent one token per chunk.
    assert sum(1 for row in replies if row["plugin"].get("category") == differential.MERGED) < len(replies) // 2
