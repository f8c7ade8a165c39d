"""V4.1 image URLs and data URLs in every place an image enters a request, as the wheel reads them.

The table (``scripts/record/image_urls.py``) holds generated URLs (schemes in any case,
media types, `;base64` markers, padding, blanks, percent-escapes, fragments, and external
URLs around the 8,192-character limit) sent as Chat `image_url` and `file_data`, Responses
`input_image`, Messages `url` sources, and Messages `base64` data, then pairs of image parts
in every order and role (`*_order`), with what each converts to.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import pytest

import deepseek_recipe as dr
from tests.reference import load_table

ROWS: list[dict[str, Any]] = load_table("image_urls")
CLASSES: dict[str, Any] = {
    "chat": dr.ChatCompletionRequest,
    "responses": dr.ResponsesRequest,
    "messages": dr.MessagesRequest,
}
PLACES = sorted({row["place"] for row in ROWS})


def source_row(source: Any) -> list[Any]:
    url = source.url if source.url is not None else source.data_url
    shown = url if url is None or len(url) <= 200 else "sha1:" + hashlib.sha1(url.encode()).hexdigest()
    return [type(source).__name__, source.detail, source.path, shown]


def outcome(cls: Any, request: dict[str, Any]) -> list[Any]:
    try:
        converted = cls(json.dumps(request)).convert(dr.ConversionOptions())
    except (ValueError, dr.ConversionError) as error:
        return [type(error).__name__, str(error)]
    sources = [source_row(s) for m in converted.conversation.messages for s in (m.image_sources or [])]
    # The conversation lists them in the same order without copying its messages.
    assert [source_row(s) for s in converted.conversation.image_sources] == sources
    return ["ok", sources]


def test_the_table_accepts_and_refuses_in_every_place() -> None:
    verdicts = Counter((row["place"], row["outcome"][0] == "ok") for row in ROWS)
    for place in PLACES:
        assert verdicts[(place, True)] >= 20, (place, verdicts)
        assert verdicts[(place, False)] >= 20, (place, verdicts)


@pytest.mark.parametrize("place", PLACES)
def test_images_convert_like_the_wheel(place: str) -> None:
    rows = [row for row in ROWS if row["place"] == place]
    mismatches = []
    for row in rows:
        got = outcome(CLASSES[place.split("_")[0]], row["request"])
        if got != row["outcome"]:
            mismatches.append((json.dumps(row["request"])[-120:], got, row["outcome"]))
    assert not mismatches, (len(mismatches), mismatches[:8])
