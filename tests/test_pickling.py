"""Everything a Ray worker may receive pickles, and the copy makes the same ids.

Encodings pickle as the calls that built them, their tokenizer as its `tokenizer.json` text;
options as their settings; a `Frontend` as its arguments (the tokenizer as its text, the
default one too). A `PreparedRequest` does not pickle, and says why. The copies are checked
in this process and in a spawned one (a real process boundary, as a Ray worker's).
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
from typing import Any

import pytest

import deepseek_recipe as dr
from deepseek_recipe.frontend import Frontend

CONVERSATION = dr.Conversation(
    [
        dr.SystemMessage("You are terse."),
        dr.UserMessage("Hello <｜User｜> 世界 🦀"),
        dr.AssistantMessage("ok", reasoning_content="hm", tool_calls=[dr.ToolCall("call_0", "f", '{"a": 1}')]),
        dr.ToolMessage("42", tool_call_id="call_0"),
        dr.UserMessage("and now?"),
    ]
)
BODY = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "hi <｜Assistant｜> 🦀 " * 20}]}
SPECIAL = dr.SpecialTokens(user="<U>")


def _round_trip(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value))


def _encodings(tokenizer: dr.Tokenizer) -> list[Any]:
    out: list[Any] = []
    for cls in (dr.DeepseekV4Encoding, dr.DeepseekV41Encoding):
        out += [cls(), cls().with_special_tokens(SPECIAL), cls().with_tokenizer(tokenizer)]
        out.append(cls().with_special_tokens(SPECIAL).with_tokenizer(tokenizer))
    return out


def test_encodings_pickle_with_their_tokenizer(tokenizer: dr.Tokenizer) -> None:
    v4 = dr.DeepseekV4Encoding().with_tokenizer(tokenizer)
    copy = _round_trip(v4)
    assert type(copy) is dr.DeepseekV4Encoding
    assert copy.encode(CONVERSATION) == v4.encode(CONVERSATION)
    assert copy.encode_ids(CONVERSATION).tolist() == v4.encode(CONVERSATION)
    for encoding in _encodings(tokenizer):
        copy = _round_trip(encoding)
        assert type(copy) is type(encoding) and copy.model_version == encoding.model_version
        got, want = copy.render_conversation(CONVERSATION), encoding.render_conversation(CONVERSATION)
        assert (got.prompt, got.special_ranges) == (want.prompt, want.special_ranges)
        assert _outcome(copy) == _outcome(encoding)
    # The special tokens travel: `<U>` is written where the default writes `<｜User｜>`.
    custom = _round_trip(dr.DeepseekV4Encoding().with_special_tokens(SPECIAL)).render_conversation(CONVERSATION)
    assert "<U>" in custom.prompt
    # Pickling twice gives the same bytes (nothing random or clock-dependent in the state).
    assert pickle.dumps(v4) == pickle.dumps(_round_trip(v4))


def _outcome(encoding: Any) -> Any:
    """The encoding's ids, or the error it raises (no tokenizer; V4.1 with the V4 tokenizer)."""
    try:
        return encoding.encode(CONVERSATION)
    except (RuntimeError, ValueError) as error:
        return type(error).__name__, str(error)


def test_options_pickle() -> None:
    parsing = dr.ParsingOptions(
        parse_tool_calls=False,
        starts_in_tool_calls=True,
        parse_json_output=True,
        thinking_initial_stage=dr.ThinkingInitialStage.ReasoningContinuation,
        stop_sequences=["STOP", "🦀"],
        special_tokens=SPECIAL,
    )
    copy = _round_trip(parsing)
    assert (
        copy.parse_tool_calls,
        copy.starts_in_tool_calls,
        copy.parse_json_output,
        copy.thinking_initial_stage,
        copy.stop_sequences,
        copy.special_tokens.token(dr.SpecialToken.User),
    ) == (False, True, True, dr.ThinkingInitialStage.ReasoningContinuation, ["STOP", "🦀"], "<U>")
    default = _round_trip(dr.ParsingOptions())
    assert default.thinking_initial_stage is None and default.stop_sequences == [] and default.parse_tool_calls
    for stage in (
        dr.ThinkingInitialStage.ReasoningStart,
        dr.ThinkingInitialStage.ReasoningContinuation,
        dr.ThinkingInitialStage.ContentContinuation,
    ):
        assert _round_trip(stage) == stage
    preprocess = _round_trip(dr.PreprocessOptions("low", 4096, 512))
    assert (preprocess.detail, preprocess.max_dimension_px, preprocess.low_detail_max_dimension_px) == (
        "low",
        4096,
        512,
    )
    conversion = dr.ConversionOptions(max_choices=3).with_model_alias("agent", dr.ModelVersion.DeepseekV4Pro)
    again = _round_trip(conversion)
    assert again.max_choices == 3 and again.model_versions_by_name == conversion.model_versions_by_name


def _prepared_ids(frontend: Frontend) -> list[int]:
    return frontend.prepare("chat", json.dumps(BODY)).prompt_ids.tolist()


def test_a_frontend_pickles_as_its_arguments(tokenizer: dr.Tokenizer) -> None:
    options = dr.ConversionOptions(default_thinking_mode=False).with_model_alias("agent", dr.ModelVersion.DeepseekV4Pro)
    for frontend in (Frontend(), Frontend(tokenizer, options=options, context_limit=4096)):
        copy = _round_trip(frontend)
        assert _prepared_ids(copy) == _prepared_ids(frontend)
        assert copy.models == frontend.models and copy.context_limit == frontend.context_limit
        assert copy.stop_token_ids == frontend.stop_token_ids
    # The options and the context limit travel: the alias resolves, max_tokens is bounded alike.
    original = Frontend(tokenizer, options=options, context_limit=4096)
    copy = _round_trip(original)
    agent = {**BODY, "model": "agent"}
    assert copy.prepare("chat", agent).sampling == original.prepare("chat", agent).sampling
    assert copy.prepare("chat", agent).thinking is False


def test_a_prepared_request_says_why_it_does_not_pickle(tokenizer: dr.Tokenizer) -> None:
    prepared = Frontend(tokenizer).prepare("chat", BODY)
    with pytest.raises(TypeError, match=r"PreparedRequest does not pickle.*Frontend\.prepare"):
        pickle.dumps(prepared)


def _in_worker(payload: bytes) -> tuple[list[int], list[int], list[int]]:
    """What a worker makes of the pickled objects (runs in a spawned process)."""
    frontend, encoding, tokenizer = pickle.loads(payload)
    return _prepared_ids(frontend), encoding.encode(CONVERSATION), tokenizer.encode("Hello <｜User｜> 世界 🦀")


def test_copies_in_another_process_make_the_same_ids(tokenizer: dr.Tokenizer) -> None:
    frontend = Frontend(tokenizer)
    encoding = dr.DeepseekV4Encoding().with_tokenizer(tokenizer)
    payload = pickle.dumps((frontend, encoding, tokenizer))
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.apply(_in_worker, (payload,))
    assert got == (_prepared_ids(frontend), encoding.encode(CONVERSATION), tokenizer.encode("Hello <｜User｜> 世界 🦀"))
