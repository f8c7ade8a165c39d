"""Streams replayed against events recorded from the public deepseek-recipe 0.2.0 wheel.

`reference_tables/stream_cases.json.gz` was written by `scripts/record/stream_tables.py` (its
docstring says how): generated requests in all three protocols (V4 and V4.1, thinking on, off
and by default, Chat assistant prefixes, tools, stop sequences, JSON mode) and generated
backend chunks (text and token chunks interleaved at random points, token chunks cut inside
multi-byte characters, special token ids, logprobs, random finish chunks). For every case the
events of every push, of `finish()`, and the accumulated response must be the reference's,
after the same normalisation of random call ids and wall-clock times.

`reference_tables/string_arg_ends.json.gz` (`scripts/record/string_arg_ends.py`) holds, in the
same shape, the ends of string tool arguments streamed as token chunks: multi-byte text split
across chunks, and markers begun right after the closing token, whose output the reference
releases with the push that completes the token (`rust/stream/tests/parser_cases.rs`).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.stream_replay import PROTOCOLS, replay

TABLES = Path(__file__).parent / "reference_tables"
CASES: list[dict[str, Any]] = json.loads(gzip.decompress((TABLES / "stream_cases.json.gz").read_bytes()))["cases"]
#: `scripts/record/string_arg_ends.py`: the ends of string tool arguments (multi-byte text,
#: markers right after the closing token) streamed as token chunks cut around them.
ARG_ENDS: list[dict[str, Any]] = json.loads(gzip.decompress((TABLES / "string_arg_ends.json.gz").read_bytes()))["cases"]


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


def test_the_argument_ends_cover_what_they_claim() -> None:
    assert len(ARG_ENDS) >= 1500
    assert {case["protocol"] for case in ARG_ENDS} == set(PROTOCOLS)
    assert all(spec[0] in ("ready", "tokens", "finish") for case in ARG_ENDS for spec in case["chunks"])
    # The family that once differed: the closing token's quote with a marker begun right after.
    marker_after = [c for c in ARG_ENDS if "at once" in c["name"] or "invoke then </" in c["name"]]
    assert len(marker_after) >= 500


@pytest.mark.parametrize("index", [pytest.param(i, id=case.get("name", str(i))) for i, case in enumerate(CASES)])
def test_stream_matches_the_reference(index: int, tokenizer: dr.Tokenizer) -> None:
    _check(CASES[index], tokenizer)


@pytest.mark.parametrize("index", [pytest.param(i, id=str(i)) for i in range(len(ARG_ENDS))])
def test_string_argument_ends_match_the_reference(index: int, tokenizer: dr.Tokenizer) -> None:
    _check(ARG_ENDS[index], tokenizer)


def _check(case: dict[str, Any], tokenizer: dr.Tokenizer) -> None:
    got = replay(case, tokenizer)
    calls = case["chunks"][: len(case["pushes"]) - 1] + [["finish()"]]
    for call, expected, actual in zip(calls, case["pushes"], got["pushes"]):
        assert actual == expected, f"events of {call!r}"
    assert len(got["pushes"]) == len(case["pushes"])
    assert got["accumulated"] == case["accumulated"]
