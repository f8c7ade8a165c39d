"""Responses usage: `input_tokens_details.cache_write_tokens` is an option of the Rust emitter.

The low-level API keeps the reference's usage (no such key); `with_cache_write_tokens()` turns
it on, and `Frontend`'s decoders (the gateway's) always do, so their events and responses
validate against today's `openai` types without any rewriting in Python. Streamed and
non-streamed, completed and incomplete.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter, ValidationError

import deepseek_recipe as dr
from deepseek_recipe.frontend import FinishReason, Frontend

EVENT = TypeAdapter(ResponseStreamEvent)
RESPONSE = TypeAdapter(Response)
BODY = {"model": "DeepSeek-V4-Pro", "input": "hi", "reasoning": {"effort": "none"}}
FINISHES = [("stop", dr.InferenceFinishReason.Stop), ("length", dr.InferenceFinishReason.Length)]


def _low_level(tokenizer: dr.Tokenizer, finish: Any, *, cache_writes: bool) -> tuple[list[str], str]:
    """The events' JSON and the accumulated response of one low-level Responses stream."""
    request = dr.ResponsesRequest(json.dumps(BODY)).convert(dr.ConversionOptions())
    generator = dr.ResponsesRequest.chunk_generator(request, "resp-1", "DeepSeek-V4-Pro")
    if cache_writes:
        generator = generator.with_cache_write_tokens()
    processor = dr.StreamProcessor(generator, request.parsing_options, tokenizer)
    usage = dr.PromptUsage(prompt_tokens=9, prompt_cache_hit_tokens=4)
    events = processor.push(dr.InferenceChunk.ready(prompt_usage=usage, system_fingerprint=None))
    events += processor.push(dr.InferenceChunk.text("Hello", 1))
    events += processor.push(dr.InferenceChunk.finish(finish))
    events += processor.finish()
    texts = [e.to_json() for e in events]
    response = dr.ResponsesResponse("resp-1", "DeepSeek-V4-Pro", 1700000000, 9, 4)
    for e in events:
        assert isinstance(e, dr.ResponsesStreamEvent)
        response.accumulate(e)
    return texts, response.to_json()


def _details(value: dict[str, Any]) -> Any:
    return value["usage"]["input_tokens_details"]


@pytest.mark.parametrize(("name", "finish"), FINISHES)
def test_the_low_level_api_keeps_the_reference_usage(tokenizer: dr.Tokenizer, name: str, finish: Any) -> None:
    texts, whole = _low_level(tokenizer, finish, cache_writes=False)
    terminal = json.loads(texts[-1])
    assert terminal["type"] == ("response.completed" if name == "stop" else "response.incomplete")
    assert _details(terminal["response"]) == {"cached_tokens": 4}
    assert _details(json.loads(whole)) == {"cached_tokens": 4}
    assert not any("cache_write_tokens" in t for t in texts)
    # Why the gateway turns it on: today's SDK types require the field.
    with pytest.raises(ValidationError, match="cache_write_tokens"):
        EVENT.validate_json(texts[-1])
    with pytest.raises(ValidationError, match="cache_write_tokens"):
        RESPONSE.validate_json(whole)


@pytest.mark.parametrize(("name", "finish"), FINISHES)
def test_the_option_reports_cache_writes(tokenizer: dr.Tokenizer, name: str, finish: Any) -> None:
    texts, whole = _low_level(tokenizer, finish, cache_writes=True)
    for text in texts:
        EVENT.validate_json(text)
    RESPONSE.validate_json(whole)
    terminal = json.loads(texts[-1])
    # After cached_tokens, in the terminal event and the accumulated response alike.
    assert '"input_tokens_details":{"cached_tokens":4,"cache_write_tokens":0}' in texts[-1]
    assert '"input_tokens_details":{"cached_tokens":4,"cache_write_tokens":0}' in whole
    assert _details(terminal["response"]) == _details(json.loads(whole))
    # Nothing else changes: the same events as without the option, but for the usage.
    plain, plain_whole = _low_level(tokenizer, finish, cache_writes=False)
    strip = ',"cache_write_tokens":0'
    assert [t.replace(strip, "") for t in texts[:-1]] == plain[:-1]
    assert json.loads(texts[-1].replace(strip, ""))["response"]["usage"] == json.loads(plain[-1])["response"]["usage"]
    assert json.loads(whole.replace(strip, ""))["output"] == json.loads(plain_whole)["output"]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("finish", ["stop", "length"])
def test_frontend_decoders_report_cache_writes(tokenizer: dr.Tokenizer, stream: bool, finish: FinishReason) -> None:
    prepared = Frontend(tokenizer).prepare("responses", {**BODY, "stream": stream})
    decoder = prepared.decoder()
    events = decoder.start(prompt_tokens=len(prepared.prompt_ids), cached_tokens=2)
    events += decoder.push_tokens(tokenizer.encode("Hello there"))
    events += decoder.finish(finish)
    if stream:
        frames = decoder.sse(events).decode().split("\n\n")
        datas = [f.split("\ndata: ", 1)[1] for f in frames if f]
        for data in datas:
            EVENT.validate_json(data)
        assert decoder.final_response == datas[-1]
        final = json.loads(datas[-1])["response"]
    else:
        decoder.accumulate(events)
        RESPONSE.validate_json(decoder.response())
        final = json.loads(decoder.response())
    assert final["status"] == ("completed" if finish == "stop" else "incomplete")
    assert _details(final) == {"cached_tokens": 2, "cache_write_tokens": 0}
