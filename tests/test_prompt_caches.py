"""The tokenizer's caches (memoized prompt gaps, recently encoded prompts) change cost,
never ids: any interleaving of agent conversations that grow, shrink, get an earlier turn
edited or are sent again encodes exactly as a cold encode (HF `tokenizers` on each gap of
the rendered prompt, the special ranges by lookup). The caches' memory bounds are tested
in Rust (`rust/tokenize/tests/gap_cache.rs`, `src/gap_cache.rs`)."""

from __future__ import annotations

import functools
import gc
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deepseek_recipe as dr

TOPICS = 3


@pytest.fixture(scope="module")
def plain_bpe(tokenizer_json: dict[str, Any]) -> tokenizers.Tokenizer:
    stripped = dict(tokenizer_json, added_tokens=[])
    return tokenizers.Tokenizer.from_str(json.dumps(stripped))


def turn_text(topic: int, turn: int, version: int) -> str:
    """About 700 bytes, distinct per (topic, turn, version): long enough to be memoized."""
    line = f"topic {topic} turn {turn} v{version}: the tool said <｜User｜> 中文 café 42 😀\n"
    return line * 10


def chat_request(topic: int, turns: int, versions: dict[int, int]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": f"You are agent {topic}. " * 40}]
    for turn in range(turns):
        text = turn_text(topic, turn, versions.get(turn, 0))
        if turn % 2 == 0:
            messages.append({"role": "user", "content": text})
        else:
            call = {"id": f"c{turn}", "type": "function", "function": {"name": "f", "arguments": '{"q": 1}'}}
            messages.append({"role": "assistant", "content": text, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"c{turn}", "content": text[::-1]})
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    return {"model": "DeepSeek-V4-Pro", "messages": messages, "tools": tools}


def cold_ids(rendered: dr.RenderedPrompt, added_vocab: dict[str, int], plain: Any) -> list[int]:
    ids: list[int] = []
    last = 0
    prompt = rendered.prompt
    for start, end in rendered.special_ranges:
        ids.extend(plain(prompt[last:start]))
        ids.append(added_vocab[prompt[start:end]])
        last = end
    ids.extend(plain(prompt[last:]))
    return ids


OPS = st.lists(
    st.tuples(st.integers(0, TOPICS - 1), st.sampled_from(["grow", "shrink", "edit", "again"])), min_size=1, max_size=14
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_interleaving_encodes_like_a_cold_encode(
    tokenizer: dr.Tokenizer,
    added_vocab: dict[str, int],
    plain_bpe: tokenizers.Tokenizer,
    ops: list[tuple[int, str]],
) -> None:
    @functools.cache
    def plain(text: str) -> tuple[int, ...]:
        return tuple(plain_bpe.encode(text, add_special_tokens=False).ids) if text else ()

    encoding = dr.DeepseekV4Encoding()
    cached = encoding.with_tokenizer(tokenizer)  # the session's tokenizer: caches shared across tests
    turns = [8] * TOPICS
    versions: list[dict[int, int]] = [{} for _ in range(TOPICS)]
    for step, (topic, op) in enumerate(ops):
        if op == "grow":
            turns[topic] += 1
        elif op == "shrink":
            turns[topic] = max(2, turns[topic] - 2)
        elif op == "edit":
            turn = step % turns[topic]
            versions[topic][turn] = versions[topic].get(turn, 0) + 1
        conversation = (
            dr.ChatCompletionRequest(chat_request(topic, turns[topic], versions[topic]))
            .convert(dr.ConversionOptions())
            .conversation
        )
        want = cold_ids(encoding.render_conversation(conversation), added_vocab, plain)
        assert len(encoding.render_conversation(conversation).prompt.encode()) > 4096
        ids = cached.encode(conversation)
        assert ids == want, f"step {step}: {op} topic {topic}"
        # The caller owns the list: changing it changes no later encode.
        ids[0] = -1
        ids.append(-2)


def test_encoding_keeps_no_list_the_cycle_collector_walks(tokenizer: dr.Tokenizer) -> None:
    """A prompt and its next turn (which reuses its ids) leave no list or tuple of their
    ids behind once the caller drops them: nothing kept costs every full collection a
    walk over 8k+ ids."""
    cached = dr.DeepseekV4Encoding().with_tokenizer(tokenizer)
    sizes = set()
    for turns in (40, 41):  # a prompt, then the same conversation one turn longer
        conversation = dr.ChatCompletionRequest(chat_request(7, turns, {})).convert(dr.ConversionOptions()).conversation
        ids = cached.encode(conversation)
        assert len(ids) > 8192  # long enough to be kept and reused
        sizes.add(len(ids))
        del ids
    gc.collect()
    tracked = [o for o in gc.get_objects() if isinstance(o, (list, tuple)) and len(o) in sizes]
    assert not tracked, [type(o).__name__ for o in tracked]


LARGE_PROMPT_SCRIPT = """
import hashlib, json, sys
import deepseek_recipe as dr
enc = dr.DeepseekV4Encoding().with_tokenizer(dr.default_tokenizer())
for request in json.load(sys.stdin):
    ids = enc.encode(dr.ChatCompletionRequest(request).convert(dr.ConversionOptions()).conversation)
    print(len(ids), hashlib.sha256(json.dumps(ids).encode()).hexdigest())
"""


def test_large_prompts_on_two_threads_equal_a_one_thread_encode() -> None:
    """A large prompt encoded on two threads (its gaps, and a long gap's pieces, in
    parallel) gives the same list as on one, for a fresh conversation with a tool result
    cut in pieces (over 1 MB), the next turn of it (which reuses it), and a conversation
    sharing only its start."""
    big = chat_request(8, 60, {})
    big["messages"].insert(1, {"role": "user", "content": turn_text(8, 99, 0) * 1600})
    grown = json.loads(json.dumps(big))
    grown["messages"].append({"role": "user", "content": turn_text(8, 100, 0)})
    other = chat_request(9, 120, {})
    requests = [big, grown, other]
    runs = {}
    for threads in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        done = subprocess.run(
            [sys.executable, "-c", LARGE_PROMPT_SCRIPT],
            input=json.dumps(requests),
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        runs[threads] = done.stdout.split("\n")
    assert runs["1"] == runs["2"]
    assert int(runs["1"][0].split()[0]) > 300_000
