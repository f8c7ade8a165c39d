"""Streams replayed against events recorded from the public deepseek-recipe 0.2.0 wheel.

`reference_tables/stream_cases.json.gz` was written by `scripts/record/stream_tables.py` (its
docstring says how): generated requests in all three protocols (V4 and V4.1, thinking on, off
and by default, Chat assistant prefixes, tools, stop sequences, JSON mode) and generated
backend chunks (text and token chunks interleaved at random points, token chunks cut inside
multi-byte characters, special token ids, logprobs, random finish chunks). For every case the
events of every push, of `finish()`, and the accumulated response must be the reference's,
after the same normalisation of random call ids and wall-clock times.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.stream_replay import PROTOCOLS, replay

TABLE = Path(__file__).parent / "reference_tables" / "stream_cases.json.gz"
CASES: list[dict[str, Any]] = json.loads(gzip.decompress(TABLE.read_bytes()))["cases"]


def test_the_table_covers_what_it_claims() -> None:
    kinds = {spec[0] for case in CASES for spec in case["chunks"]}
    assert kinds == {"ready", "text", "tokens", "finish"}
    assert {case["protocol"] for case in CASES} == set(PROTOCOLS)
    mixed = [c for c in CASES if {"text", "tokens"} <= {s[0] for s in c["chunks"]}]
    with_logprobs = [c for c in CASES if any(s[0] == "tokens" and s[2] for s in c["chunks"])]
    prefixed = [c for c in CASES if c["protocol"] == "chat" and c["body"]["messages"][-1].get("prefix")]
    split_characters = [c for c in CASES if any(s[0] == "tokens" and set(s[1]) & {3574, 102} for s in c["chunks"])]
    assert min(len(mixed), len(with_logprobs), len(prefixed), len(split_characters)) >= 100
    assert {c["body"]["model"] for c in CASES} == {"DeepSeek-V4-Pro", "DeepSeek-V4.1-Flash"}


@pytest.mark.parametrize("index", [pytest.param(i, id=case.get("name", str(i))) for i, case in enumerate(CASES)])
def test_stream_matches_the_reference(index: int, tokenizer: dr.Tokenizer) -> None:
    case = CASES[index]
    got = replay(case, tokenizer)
    calls = case["chunks"][: len(case["pushes"]) - 1] + [["finish()"]]
    for call, expected, actual in zip(calls, case["pushes"], got["pushes"]):
        assert actual == expected, f"events of {call!r}"
    assert len(got["pushes"]) == len(case["pushes"])
    assert got["accumulated"] == case["accumulated"]
