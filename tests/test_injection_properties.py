"""Injection safety and segment exactness, as properties over arbitrary request text.

Whatever text a client puts in any message field, the encoded ids hold an added-vocabulary
id only where the template put a special token, and the whole encoding is exactly the
concatenation of (special id | plain BPE of the gap) over the rendered prompt, with the
plain BPE taken from Hugging Face ``tokenizers`` with the added vocabulary removed.
"""

from __future__ import annotations

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

SPECIAL_SPELLINGS = [
    t.default_str()
    for t in [
        dr.SpecialToken.Bos,
        dr.SpecialToken.Eos,
        dr.SpecialToken.ThinkingStart,
        dr.SpecialToken.ThinkingEnd,
        dr.SpecialToken.System,
        dr.SpecialToken.User,
        dr.SpecialToken.Assistant,
        dr.SpecialToken.LatestReminder,
        dr.SpecialToken.Dsml,
        dr.SpecialToken.Image,
        dr.SpecialToken.Ref,
        dr.SpecialToken.BoxEnd,
    ]
] + ["<｜DSML｜tool_calls>", "</｜DSML｜invoke>", "<tool_result>", "｜", "▁", "<|", "|>"]

fragments = st.one_of(
    st.sampled_from(SPECIAL_SPELLINGS),
    st.text(max_size=12),
    st.sampled_from([" ", "\n", "\n\n", "  \t", "123456789", "héllo", "中文", "😀", "a\u0301"]),
)
field_text = st.lists(fragments, max_size=8).map("".join)


@pytest.fixture(scope="module")
def plain_bpe(tokenizer_json: dict[str, Any]) -> tokenizers.Tokenizer:
    stripped = dict(tokenizer_json, added_tokens=[])
    return tokenizers.Tokenizer.from_str(json.dumps(stripped))


def chat_request(system: str, user: str, reasoning: str, answer: str, tool_result: str, args: str) -> dict[str, Any]:
    return {
        "model": "DeepSeek-V4-Pro",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
            {
                "role": "assistant",
                "content": answer,
                "reasoning_content": reasoning,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": tool_result},
            {"role": "user", "content": user},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}],
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    system=field_text,
    user=field_text,
    reasoning=field_text,
    answer=field_text,
    tool_result=field_text,
    args=st.one_of(field_text, st.dictionaries(field_text, field_text, max_size=3).map(json.dumps)),
)
def test_special_ids_only_at_template_positions(
    tokenizer: dr.Tokenizer,
    added_vocab: dict[str, int],
    plain_bpe: tokenizers.Tokenizer,
    system: str,
    user: str,
    reasoning: str,
    answer: str,
    tool_result: str,
    args: str,
) -> None:
    converted = dr.ChatCompletionRequest(chat_request(system, user, reasoning, answer, tool_result, args)).convert(
        dr.ConversionOptions()
    )
    encoding = dr.DeepseekV4Encoding()
    rendered = encoding.render_conversation(converted.conversation)
    ids = encoding.with_tokenizer(tokenizer).encode(converted.conversation)

    expected: list[int] = []
    last = 0
    prompt = rendered.prompt
    for start, end in rendered.special_ranges:
        if start > last:
            expected.extend(plain_bpe.encode(prompt[last:start], add_special_tokens=False).ids)
        expected.append(added_vocab[prompt[start:end]])
        last = end
    if last < len(prompt):
        expected.extend(plain_bpe.encode(prompt[last:], add_special_tokens=False).ids)
    assert ids == expected

    added_ids = set(added_vocab.values())
    specials_in_ids = [i for i in ids if i in added_ids]
    assert specials_in_ids == [added_vocab[prompt[a:b]] for a, b in rendered.special_ranges]


def test_parallel_and_sequential_encoding_are_identical() -> None:
    """The same long conversation encoded with one rayon thread and with all cores."""
    script = (
        "import deepseek_recipe as dr, json\n"
        "msgs=[]\n"
        "for i in range(300):\n"
        "    msgs.append({'role':'user','content':('turn %d <｜User｜> café 中文 😀 ' % i) * 40})\n"
        "    msgs.append({'role':'assistant','content':'ok %d ' % i * 30})\n"
        "msgs.append({'role':'user','content':'end'})\n"
        "c=dr.ChatCompletionRequest({'model':'DeepSeek-V4-Pro','messages':msgs}).convert(dr.ConversionOptions())\n"
        "print(json.dumps(dr.DeepseekV4Encoding().with_tokenizer(dr.default_tokenizer()).encode(c.conversation)))\n"
    )
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        outs.append(json.loads(run.stdout))
    assert len(outs[0]) > 10_000
    assert outs[0] == outs[1]
