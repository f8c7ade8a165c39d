"""`max_tokens` against the configured upper bounds, in all three protocols, as the wheel does.

The table (``scripts/record/max_tokens_bounds.py``) sweeps both bounds over their edges and
`max_tokens` over its edges around them, thinking on and off. Chat Completions and Responses
reject a value above the bound; Messages lowers it to the bound, and so rejects every value
when the bound is 0 (`[1, 0]`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.reference import load_table

TABLE = load_table("max_tokens_bounds")
CLASSES: dict[str, Any] = {
    "chat": dr.ChatCompletionRequest,
    "responses": dr.ResponsesRequest,
    "messages": dr.MessagesRequest,
}


def outcome(protocol: str, options: dr.ConversionOptions, request: dict[str, Any]) -> list[Any]:
    try:
        converted = CLASSES[protocol](json.dumps(request)).convert(options)
    except (ValueError, dr.ConversionError) as error:
        return [type(error).__name__, str(error)]
    return ["ok", converted.inference_options.max_tokens]


def test_every_recorded_bound_and_max_tokens_converts_like_the_wheel() -> None:
    cases = TABLE["cases"]
    assert len(cases) > 800
    options: dict[tuple[int, int], dr.ConversionOptions] = {}
    mismatches = []
    for case in cases:
        key = (case["thinking_bound"], case["non_thinking_bound"])
        if key not in options:
            options[key] = dr.ConversionOptions(
                thinking_max_tokens_upper_bound=key[0], non_thinking_max_tokens_upper_bound=key[1]
            )
        got = outcome(case["protocol"], options[key], case["request"])
        if got != case["outcome"]:
            mismatches.append((case["protocol"], key, case["thinking"], case["max_tokens"], got, case["outcome"]))
    assert not mismatches, mismatches[:10]


def test_the_sweep_covers_both_rules() -> None:
    """The table holds accepted, lowered and rejected values in every protocol."""
    seen = set()
    for case in TABLE["cases"]:
        verdict, value = case["outcome"]
        lowered = verdict == "ok" and value is not None and value != case["max_tokens"]
        seen.add((case["protocol"], verdict, lowered))
    for protocol in CLASSES:
        assert (protocol, "ok", False) in seen
        assert (protocol, "ConversionError", False) in seen
    assert ("messages", "ok", True) in seen


@pytest.mark.parametrize("case", TABLE["refused_options"], ids=lambda c: f"{c['keyword']}-{c['how']}-{c['value']}")
def test_bounds_the_options_refuse(case: dict[str, Any]) -> None:
    keyword, value = case["keyword"], case["value"]
    with pytest.raises(Exception) as info:
        if case["how"] == "constructor":
            dr.ConversionOptions(**{keyword: value})
        else:
            getattr(dr.ConversionOptions(), f"with_{keyword}")(value)
    assert [type(info.value).__name__, str(info.value)] == case["outcome"]
