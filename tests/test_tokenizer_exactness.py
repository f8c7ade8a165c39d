"""`Tokenizer.encode` gives HF `tokenizers`' ids for the same tokenizer.json: on a sample of
the benchmark's mixed corpus, on adversarial shapes (huge whitespace and digit runs,
stacked combining marks, mixed newlines, alternating scripts), and on hypothesis-generated
Unicode text built from the same shapes. The benchmark checks the whole ~20 MB corpus."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deepseek_recipe as dr

BENCH_WORKLOADS = Path(__file__).resolve().parent.parent / "bench" / "workloads.py"


@pytest.fixture(scope="module")
def hf(tokenizer_json: dict[str, Any]) -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json))


def hf_ids(hf: tokenizers.Tokenizer, text: str) -> list[int]:
    ids: list[int] = hf.encode(text, add_special_tokens=False).ids
    return ids


def first_difference(ours: list[int], theirs: list[int]) -> str:
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return f"{len(ours)} vs {len(theirs)} ids, first difference at {at}: {ours[at : at + 5]} vs {theirs[at : at + 5]}"


def assert_same(tokenizer: dr.Tokenizer, hf: tokenizers.Tokenizer, text: str, what: str) -> None:
    ours, theirs = tokenizer.encode(text), hf_ids(hf, text)
    assert ours == theirs, f"{what}: {first_difference(ours, theirs)}"


@functools.cache
def bench_workloads() -> ModuleType:
    """The benchmark's text generator (deterministic, standard library only)."""
    spec = importlib.util.spec_from_file_location("bench_workloads", BENCH_WORKLOADS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_sample_of_the_benchmark_corpus(
    tokenizer: dr.Tokenizer, hf: tokenizers.Tokenizer, added_vocab: dict[str, int], seed: int
) -> None:
    # 300 kB per seed, cut in lines so a difference is reported where it is.
    text: str = bench_workloads().corpus(seed, 300_000, list(added_vocab))
    assert len(text) > 200_000
    assert_same(tokenizer, hf, text, f"seed {seed}, whole")
    lines = text.splitlines(keepends=True)
    for i in range(0, len(lines), 200):
        assert_same(tokenizer, hf, "".join(lines[i : i + 200]), f"seed {seed}, lines {i}..")


ADVERSARIAL = {
    "100k spaces": " " * 100_000,
    "100k spaces then a word": " " * 100_000 + "word",
    "a word then 100k spaces": "word" + " " * 100_000,
    "100k newlines": "\n" * 100_000,
    "mixed newlines": "a\r\n\r\rb\n\r\n \n\t\r" * 10_000,
    "100k digits": "1234567890" * 10_000,
    "digits of other scripts": "٠١٢٣٤٥٦٧٨٩０１２３４５６７８９²³¹" * 5_000,
    "digits between letters": "a1b22c333d4444e55555 " * 5_000,
    "stacked combining marks": "e" + "\u0301\u0308\u0323" * 3_000 + " a\u0301",
    "combining marks after spaces and digits": " \u0301 1\u0308 \u0301\u0301x" * 5_000,
    "alternating scripts": "a中b한cひdカeאfا😀g" * 5_000,
    "alternating scripts with spaces": "word 中文 한국어 ひらがな カタカナ עברית عربي 😀 " * 3_000,
    "one long word": "abcdefghij" * 10_000,
    "one long kanji run": "中文字符测试漢字" * 10_000,
    "punctuation run": "!?.,;:" * 10_000,
    "unicode spaces": "\u00a0\u3000\u2028\u2029\u0085\u1680\u202f x" * 10_000,
    "emoji sequences": "👩\u200d👩\u200d👧 👍🏽 🇯🇵" * 5_000,
    "special spellings typed in text": "<｜User｜>hi</think><｜DSML｜invoke>" * 3_000,
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_shapes(tokenizer: dr.Tokenizer, hf: tokenizers.Tokenizer, name: str) -> None:
    assert_same(tokenizer, hf, ADVERSARIAL[name], name)


SHAPES = st.sampled_from(
    [
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\u00a0",
        "\u3000",
        "\u2028",
        "0",
        "7",
        "١",
        "７",
        "²",
        "a",
        "Z",
        "é",
        "ß",
        "e\u0301",
        "\u0301",
        "\u0308",
        "中",
        "ひ",
        "カ",
        "한",
        "א",
        "ا",
        "😀",
        "👍🏽",
        "\u200d",
        ".",
        "!",
        "'",
        "-",
        "_",
        "<｜User｜>",
        "</think>",
        "｜DSML｜",
        "<｜",
    ]
)
RUNS = st.tuples(SHAPES, st.integers(min_value=1, max_value=3_000)).map(lambda run: run[0] * run[1])
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
TEXTS = st.lists(st.one_of(RUNS, ANY_TEXT, SHAPES), max_size=16).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_generated_unicode_text(tokenizer: dr.Tokenizer, hf: tokenizers.Tokenizer, text: str) -> None:
    assert_same(tokenizer, hf, text, repr(text[:200]))
