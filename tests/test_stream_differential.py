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
import re
from pathlib import Path
from typing import Any

import pytest

import deepseek_recipe as dr

TABLE = Path(__file__).parent / "reference_tables" / "stream_cases.json.gz"
CASES: list[dict[str, Any]] = json.loads(gzip.decompress(TABLE.read_bytes()))["cases"]
PROTOCOLS: dict[str, tuple[Any, Any]] = {
    "chat": (dr.ChatCompletionRequest, dr.ChatCompletionResponse),
    "responses": (dr.ResponsesRequest, dr.ResponsesResponse),
    "messages": (dr.MessagesRequest, dr.MessagesResponse),
}
ID_RE = re.compile(r"call_(\d+)_(ET_)?([A-Za-z0-9]{20}[0-9]{4})(?![A-Za-z0-9])")
TS_RE = re.compile(r'"(created|created_at|completed_at)":(\d+)(?=[,}\]])')
FIXED_CREATED = 1700000000


def normalise(text: str, ids: dict[str, str]) -> str:
    """The recorder's rule: call-id tails become <R1>, <R2>, … by first appearance in the
    case; wall-clock timestamps become "<now>" (the accumulators' fixed `created` stays)."""

    def repl_id(m: re.Match[str]) -> str:
        tail = ids.setdefault(m.group(3), f"<R{len(ids) + 1}>")
        return f"call_{m.group(1)}_{m.group(2) or ''}{tail}"

    def repl_ts(m: re.Match[str]) -> str:
        if int(m.group(2)) == FIXED_CREATED:
            return m.group(0)
        return f'"{m.group(1)}":"<now>"'

    return TS_RE.sub(repl_ts, ID_RE.sub(repl_id, text))


def make_chunk(spec: list[Any]) -> dr.InferenceChunk:
    kind = spec[0]
    if kind == "ready":
        usage = dr.PromptUsage(prompt_tokens=spec[1], prompt_cache_hit_tokens=spec[2])
        return dr.InferenceChunk.ready(prompt_usage=usage, system_fingerprint=spec[3])
    if kind == "text":
        return dr.InferenceChunk.text(spec[1], spec[2])
    if kind == "tokens":
        logprobs = None if spec[2] is None else [(lp, [(i, lp_) for i, lp_ in top]) for lp, top in spec[2]]
        return dr.InferenceChunk.tokens(spec[1], logprobs)
    return dr.InferenceChunk.finish(getattr(dr.InferenceFinishReason, spec[1]))


def replay(case: dict[str, Any], tokenizer: dr.Tokenizer) -> dict[str, Any]:
    request_cls, response_cls = PROTOCOLS[case["protocol"]]
    converted = request_cls(json.dumps(case["body"])).convert(dr.ConversionOptions())
    processor = dr.StreamProcessor(
        request_cls.chunk_generator(converted, "resp-1", "DeepSeek-V4.1-Flash"), converted.parsing_options, tokenizer
    )
    ids: dict[str, str] = {}
    pushes: list[list[str]] = []
    events: list[Any] = []
    for spec in case["chunks"]:
        if processor.finished:
            break
        got = processor.push(make_chunk(spec))
        events += got
        pushes.append([normalise(e.to_json(), ids) for e in got])
    got = processor.finish()
    events += got
    pushes.append([normalise(e.to_json(), ids) for e in got])
    response = response_cls("resp-1", "DeepSeek-V4.1-Flash", FIXED_CREATED, 7, 3)
    for e in events:
        response.accumulate(e)
    return {"pushes": pushes, "accumulated": normalise(response.to_json(), ids)}


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
