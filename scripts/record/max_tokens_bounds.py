"""Record how the reference bounds `max_tokens`, for tests/test_max_tokens_bounds.py.

Sweeps `ConversionOptions(thinking_max_tokens_upper_bound=..., non_thinking_...=...)` over
their edges, `max_tokens` (`max_output_tokens` in Responses) over its edges around each
bound, the three protocols, and thinking on and off, and writes what each request converts
to: the resolved `max_tokens`, or the error type and message. Option values the options
refuse are recorded with their error too.

Run with the published wheel, never with this package:

    /work/venv-ref/bin/python scripts/record/max_tokens_bounds.py

Recorded with deepseek-recipe 0.2.0 (the PyPI wheel) into
tests/reference_tables/max_tokens_bounds.json.gz.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import deepseek_recipe as dr

OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "max_tokens_bounds.json.gz"
MODEL = "DeepSeek-V4-Pro"
U32 = 2**32 - 1
BOUNDS = [0, 1, 2, 3, 1024, 393_216, U32]
REFUSED_BOUNDS = [-1, 2**32, 2**63, 2**64]


def max_tokens_edges(bound: int) -> list[int | None]:
    around = {0, 1, 2, bound - 1, bound, bound + 1, 2 * bound, 65_536, 2**31, U32, 2**32}
    return [None, *sorted(v for v in around if v >= 0)]


def body(protocol: str, max_tokens: int | None, thinking: bool) -> dict[str, Any]:
    user = [{"role": "user", "content": "x"}]
    if protocol == "responses":
        out: dict[str, Any] = {"model": MODEL, "input": "x", "reasoning": {"effort": "high" if thinking else "none"}}
        key = "max_output_tokens"
    else:
        out = {"model": MODEL, "messages": user, "thinking": {"type": "enabled" if thinking else "disabled"}}
        key = "max_tokens"
    if max_tokens is not None:
        out[key] = max_tokens
    return out


CLASSES = {"chat": dr.ChatCompletionRequest, "responses": dr.ResponsesRequest, "messages": dr.MessagesRequest}


def outcome(protocol: str, options: Any, request: dict[str, Any]) -> list[Any]:
    try:
        converted = CLASSES[protocol](json.dumps(request)).convert(options)
    except Exception as error:
        return [type(error).__name__, str(error)]
    return ["ok", converted.inference_options.max_tokens]


def main() -> None:
    cases: list[dict[str, Any]] = []
    for thinking_bound in BOUNDS:
        # The other bound differs, so a case shows which of the two applied.
        other = 7 if thinking_bound != 7 else 8
        for thinking in (True, False):
            for which in ("thinking", "non_thinking"):
                bounds = {"thinking": thinking_bound, "non_thinking": other}
                if which == "non_thinking":
                    bounds = {"thinking": other, "non_thinking": thinking_bound}
                options = dr.ConversionOptions(
                    thinking_max_tokens_upper_bound=bounds["thinking"],
                    non_thinking_max_tokens_upper_bound=bounds["non_thinking"],
                )
                for max_tokens in max_tokens_edges(thinking_bound):
                    for protocol in CLASSES:
                        request = body(protocol, max_tokens, thinking)
                        cases.append(
                            {
                                "protocol": protocol,
                                "thinking_bound": bounds["thinking"],
                                "non_thinking_bound": bounds["non_thinking"],
                                "thinking": thinking,
                                "max_tokens": max_tokens,
                                "request": request,
                                "outcome": outcome(protocol, options, request),
                            }
                        )
    refused = []
    for value in REFUSED_BOUNDS:
        for keyword in ("thinking_max_tokens_upper_bound", "non_thinking_max_tokens_upper_bound"):
            for how in ("constructor", "with"):
                try:
                    if how == "constructor":
                        dr.ConversionOptions(**{keyword: value})
                    else:
                        getattr(dr.ConversionOptions(), f"with_{keyword}")(value)
                    got = ["ok"]
                except Exception as error:
                    got = [type(error).__name__, str(error)]
                refused.append({"keyword": keyword, "how": how, "value": value, "outcome": got})
    table = {"cases": cases, "refused_options": refused}
    # mtime=0: the same table gives the same bytes, so re-recording shows no spurious diff.
    OUT.write_bytes(gzip.compress(json.dumps(table, separators=(",", ":")).encode(), mtime=0))
    print(f"{len(cases)} cases, {len(refused)} refused options -> {OUT}")


if __name__ == "__main__":
    main()
