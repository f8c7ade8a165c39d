"""``TokenIds.common_prefix`` on ids a stored turn extends (held as slices of the last turn's)
and on ids made from lists: always the count of leading ids both share."""

from __future__ import annotations

import json
import os

from deepseek_recipe._native import ResponsesHistory, ResponsesRequest, TokenIds
from deepseek_recipe.frontend import Frontend


def shared(a: list[int], b: list[int]) -> int:
    return len(os.path.commonprefix([a, b]))  # noqa: RUF071 (ids, element by element)


def test_common_prefix_of_turns_that_extend_each_other() -> None:
    frontend = Frontend()
    history = ResponsesHistory()
    previous = None
    turns: list[TokenIds] = []
    for turn in range(6):
        body = {
            "model": "DeepSeek-V4-Pro",
            "input": [{"role": "user", "content": f"Turn {turn}: " + "tell me more. " * (turn * 40 + 1)}],
        }
        request = ResponsesRequest(json.dumps(body))
        _, history, previous = frontend.encode_continuing(request, history, previous=previous)
        output = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "More."}]}]
        history = history.extend(json.dumps(output))
        turns.append(previous.ids)
    lists = [ids.tolist() for ids in turns]
    for a, ids_a in zip(lists, turns):
        for b, ids_b in zip(lists, turns):
            expected = shared(a, b)
            assert ids_a.common_prefix(ids_b) == expected
            assert ids_a.common_prefix(TokenIds(b)) == expected
            changed = list(b)
            if expected < len(changed):
                changed[expected] ^= 1
            if changed:
                changed[len(changed) // 2] += 1
                assert ids_a.common_prefix(TokenIds(changed)) == shared(a, changed)
    assert TokenIds([]).common_prefix(turns[0]) == 0
