"""The vLLM plugin's parts that need no vLLM: vLLM's chat form mapped back to a Chat body, the
prompt format a deployment renders, the output parser the tool and reasoning parsers share, and
registration (against a stand-in for vLLM's registries). The plugin inside a real vLLM is
tested in ``tests/vllm/``."""

from __future__ import annotations

import json
import logging
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deepseek_recipe as dr
import deepseek_recipe.vllm as plugin
from deepseek_recipe.vllm._chat import chat_body, thinking_mode
from deepseek_recipe.vllm._deltas import Delta, OutputParser
from deepseek_recipe.vllm._model import model_version

# -- vLLM's chat form -> a Chat Completions body -----------------------------------------------


class _Model:
    """Stands in for one of vLLM's pydantic request models."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def model_dump(self, *, by_alias: bool, exclude_none: bool) -> dict[str, Any]:
        assert by_alias and exclude_none
        return {k: v for k, v in self.fields.items() if v is not None}


def test_vllm_names_and_defaults_are_undone() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi", "name": "ana"},
        {"role": "assistant", "content": "", "reasoning": "why", "tool_calls": []},
        {"role": "assistant", "content": "Roses are"},
    ]
    tools = [
        {"type": "function", "function": {"name": "f", "description": None, "parameters": None, "strict": None}},
        {"type": "function", "function": {"name": "g", "description": "d", "strict": False}},
    ]
    body = chat_body(
        messages,
        model="DeepSeek-V4-Pro",
        template_kwargs={
            "tools": tools,
            "continue_final_message": True,
            "enable_thinking": False,
            "reasoning_effort": "none",
        },
        tool_choice="auto",
        response_format=_Model(type="json_object", json_schema=None),
    )
    assert body == {
        "model": "DeepSeek-V4-Pro",
        "messages": [
            {"role": "user", "content": "hi", "name": "ana"},
            {"role": "assistant", "content": "", "reasoning_content": "why", "tool_calls": []},
            {"role": "assistant", "content": "Roses are", "prefix": True},
        ],
        "tools": [
            {"type": "function", "function": {"name": "f"}},
            {"type": "function", "function": {"name": "g", "description": "d", "strict": False}},
        ],
        "tool_choice": "auto",
        "response_format": {"type": "json_object"},
        "thinking": {"type": "disabled"},
        "reasoning_effort": "none",
    }
    assert messages[1]["reasoning"] == "why", "the caller's messages are not changed"


def test_a_client_reasoning_content_wins_over_vllms_copy() -> None:
    body = chat_body(
        [{"role": "assistant", "content": "a", "reasoning": "vllm", "reasoning_content": "client"}],
        model="m",
        template_kwargs={},
    )
    assert body["messages"] == [{"role": "assistant", "content": "a", "reasoning_content": "client"}]
    assert "thinking" not in body and "tools" not in body


@pytest.mark.parametrize(
    ("kwargs", "thinking"),
    [
        ({}, True),
        ({"thinking": False}, False),
        ({"enable_thinking": False}, False),
        ({"thinking": True, "enable_thinking": False}, True),
        ({"reasoning_effort": "none"}, False),
        ({"reasoning_effort": "max"}, True),
        ({"reasoning_effort": "none", "enable_thinking": False}, False),
    ],
)
def test_thinking_mode_follows_the_conversion_rules(kwargs: dict[str, Any], thinking: bool) -> None:
    assert thinking_mode(kwargs, dr.ConversionOptions()) is thinking
    assert thinking_mode(kwargs, dr.ConversionOptions(default_thinking_mode=False)) is (thinking if kwargs else False)


def test_the_prompt_format_a_deployment_renders() -> None:
    table = dr.ConversionOptions().model_versions_by_name
    assert model_version(["DeepSeek-V4.1-Flash"], table, False) == dr.ModelVersion.DeepseekV41Flash
    assert model_version(["my-model", "DeepSeek-V4-Pro"], table, True) == dr.ModelVersion.DeepseekV4Pro
    assert model_version(["my-model"], table, True) == dr.ModelVersion.DeepseekV41Flash
    assert model_version([], table, False) == dr.ModelVersion.DeepseekV4Pro


# -- the output parser ---------------------------------------------------------------------------

TOOL_CALL = (
    "<｜DSML｜tool_calls>\n"
    '<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Zürich 東京 🧑‍🔬</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>"
)
OUTPUT = "Think 𝔘 about it.</think>Sure 🙂.\n\n" + TOOL_CALL + "<｜end▁of▁sentence｜>"


@pytest.fixture(scope="module")
def output_ids(tokenizer: dr.Tokenizer) -> list[int]:
    return tokenizer.encode(OUTPUT)


def _parse(tokenizer: dr.Tokenizer, ids: list[int], cuts: list[int]) -> tuple[Delta, list[Delta]]:
    parser = OutputParser(tokenizer, reasoning=True, tool_calls=True)
    pieces, start = [], 0
    for cut in [*cuts, len(ids)]:
        pieces.append(parser.push_ids(ids[start:cut]))
        start = cut
    pieces.append(parser.finish())
    whole = Delta()
    for piece in pieces:
        whole.reasoning += piece.reasoning
        whole.content += piece.content
        whole.tool_calls += piece.tool_calls
    return whole, pieces


def _arguments(delta: Delta) -> str:
    return "".join(call.arguments or "" for call in delta.tool_calls)


def test_ids_parse_into_reasoning_content_and_streamed_arguments(
    tokenizer: dr.Tokenizer, output_ids: list[int]
) -> None:
    whole, pieces = _parse(tokenizer, output_ids, list(range(1, len(output_ids))))
    assert whole.reasoning == "Think 𝔘 about it."
    assert whole.content == "Sure 🙂."
    assert [(c.index, c.name) for c in whole.tool_calls if c.id] == [(0, "get_weather")]
    assert json.loads(_arguments(whole)) == {"city": "Zürich 東京 🧑‍🔬", "days": 3}
    argument_pieces = [c.arguments for piece in pieces for c in piece.tool_calls if c.arguments]
    assert len(argument_pieces) > 5, "arguments stream while the model writes them"
    for piece in pieces:
        assert "｜DSML｜" not in piece.content + piece.reasoning + _arguments(piece)
        assert "\ufffd" not in piece.content + piece.reasoning + _arguments(piece)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_chunking_never_changes_the_parse(tokenizer: dr.Tokenizer, output_ids: list[int], data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, len(output_ids) - 1))))
    whole, _ = _parse(tokenizer, output_ids, cuts)
    reference, _ = _parse(tokenizer, output_ids, [])
    assert (whole.reasoning, whole.content, _arguments(whole)) == (
        reference.reasoning,
        reference.content,
        _arguments(reference),
    )


def test_holdback_is_bounded(tokenizer: dr.Tokenizer) -> None:
    """Plain content is released as it comes: after each whole word, nothing of it waits."""
    parser = OutputParser(tokenizer, reasoning=False, tool_calls=True)
    out = ""
    for word in ["alpha", " beta", " gamma", " delta", " 東京", " end"]:
        for token in tokenizer.encode(word):
            out += parser.push_ids([token]).content
        assert out.endswith(word.strip()), out


def test_the_end_of_reasoning_is_seen_on_its_id(tokenizer: dr.Tokenizer) -> None:
    parser = OutputParser(tokenizer, reasoning=True, tool_calls=True)
    parser.push_ids(tokenizer.encode("Thinking"))
    assert not parser.reasoning_ended
    assert not parser.push_ids(tokenizer.encode("</think>"))
    assert parser.reasoning_ended, "the marker alone ends the block, before any content"


def test_a_typed_marker_in_text_ids_is_text(tokenizer: dr.Tokenizer) -> None:
    """``</think>`` written as ordinary text tokens (not the marker's id) stays reasoning text."""
    parser = OutputParser(tokenizer, reasoning=True, tool_calls=True)
    ids = tokenizer.encode_ordinary("a </think> b")
    delta = parser.push_ids(ids)
    delta.reasoning += parser.finish().reasoning
    assert delta.reasoning == "a </think> b" and not parser.reasoning_ended


def test_stop_sequences_apply_to_content(tokenizer: dr.Tokenizer) -> None:
    parser = OutputParser(tokenizer, reasoning=True, tool_calls=True, stop=["STOP"])
    delta = parser.push_ids(tokenizer.encode("say STOP in reasoning</think>one STOP two"))
    assert delta.reasoning == "say STOP in reasoning"
    assert delta.content == "one "
    assert parser.finished


def test_text_parses_like_ids(tokenizer: dr.Tokenizer) -> None:
    parser = OutputParser(tokenizer, reasoning=True, tool_calls=True)
    delta = parser.push_text(OUTPUT)
    delta.content += parser.finish().content
    assert (delta.reasoning, delta.content) == ("Think 𝔘 about it.", "Sure 🙂.")
    assert json.loads(_arguments(delta))["days"] == 3


# -- registration -----------------------------------------------------------------------------


class _Registry:
    def __init__(self) -> None:
        self.entries: dict[str, tuple[str, ...]] = {}

    def register(self, name: str, *where: str) -> None:
        self.entries[name] = where

    def register_lazy_module(self, name: str, *where: str) -> None:
        self.entries[name] = where


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[types.ModuleType, dict[str, _Registry]]]:
    registries = {name: _Registry() for name in ("tokenizers", "renderers", "tools", "reasoning")}
    modules: dict[str, dict[str, Any]] = {
        "vllm": {"__version__": "0.32.0"},
        "vllm.tokenizers": {},
        "vllm.tokenizers.registry": {"TokenizerRegistry": registries["tokenizers"]},
        "vllm.renderers": {},
        "vllm.renderers.registry": {"RENDERER_REGISTRY": registries["renderers"]},
        "vllm.tool_parsers": {"ToolParserManager": registries["tools"]},
        "vllm.reasoning": {"ReasoningParserManager": registries["reasoning"]},
    }
    for name, attributes in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        monkeypatch.setitem(sys.modules, name, module)
    yield sys.modules["vllm"], registries


def test_register_names_every_part(fake_vllm: tuple[types.ModuleType, dict[str, _Registry]]) -> None:
    _, registries = fake_vllm
    plugin.register()
    assert registries["tokenizers"].entries == {"deepseek_recipe": ("vllm.tokenizers.hf", "CachedHfTokenizer")}
    assert registries["renderers"].entries == {
        "deepseek_recipe": ("deepseek_recipe.vllm.renderer", "DeepseekRecipeRenderer")
    }
    assert registries["tools"].entries == {
        "deepseek_recipe": ("deepseek_recipe.vllm.parsers", "DeepseekRecipeToolParser")
    }
    assert registries["reasoning"].entries == {
        "deepseek_recipe": ("deepseek_recipe.vllm.parsers", "DeepseekRecipeReasoningParser")
    }


@pytest.mark.parametrize("version", ["0.31.9", "0.33.0", "1.0.0", "dev"])
def test_outside_the_supported_range_nothing_is_registered(
    fake_vllm: tuple[types.ModuleType, dict[str, _Registry]], caplog: pytest.LogCaptureFixture, version: str
) -> None:
    module, registries = fake_vllm
    module.__version__ = version  # type: ignore[attr-defined]
    with caplog.at_level(logging.WARNING, logger="deepseek_recipe.vllm"):
        plugin.register()
    assert all(not registry.entries for registry in registries.values())
    assert "outside the supported range" in caplog.text


@pytest.mark.parametrize(("version", "release"), [("0.32.0", (0, 32)), ("0.32.1rc1+cpu", (0, 32)), ("0.33", (0, 33))])
def test_release_of_a_version(version: str, release: tuple[int, int]) -> None:
    assert plugin._release(version) == release


def test_the_base_package_never_imports_vllm() -> None:
    import subprocess

    code = "import sys, deepseek_recipe, deepseek_recipe.gateway; print('vllm' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )
