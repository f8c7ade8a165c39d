"""Record how the reference reads image URLs and data URLs (V4.1), for tests/test_image_urls.py.

Generated URLs go through every place an image enters a request: Chat `image_url` parts and
`file` parts (`file_data`), Responses `input_image` parts, and Messages `url` and `base64`
image sources. The generator mixes schemes in any case, leading blanks, media types and
parameters, `;base64` markers, base64 bodies with unusual padding, blanks, percent-escapes
and stray characters, fragments, and external URLs around the 8,192-character limit (ASCII
and multi-byte); then pairs of image parts in every order and in every role that can carry
them, on V4.1 and V4 (which check reports first, and at which path). Each row holds what
the request converts to: the image sources (class, detail, path, and the URL, or its SHA-1
when long) or the error type and message.

Run with the published wheel, never with this package:

    /work/venv-ref/bin/python scripts/record/image_urls.py

Recorded with deepseek-recipe 0.2.0 (the PyPI wheel) into
tests/reference_tables/image_urls.json.gz.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import deepseek_recipe as dr

OUT = Path(__file__).resolve().parents[2] / "tests" / "reference_tables" / "image_urls.json.gz"
MODEL = "DeepSeek-V4.1-Flash"

SCHEMES = ["data:", "DATA:", "Data:", " data:", "\tdata:", "data: ", "dat:", "", "data;", "data:data:"]
MIMES = [
    "image/png",
    "IMAGE/PNG",
    "image/jpeg",
    "image/jpg",
    "image/gif",
    "image/webp",
    "Image/Webp",
    "image/bmp",
    "text/plain",
    "",
    " image/png",
    "image/png ",
    "image/png;charset=utf-8",
    "image/svg+xml",
    "image",
    "image/png,",
]
MARKERS = [";base64", ";BASE64", "; base64", ";base64 ", ";Base64", "", ";base64;", ";charset=x;base64", ";;base64"]
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
NOISE = [
    "=",
    "==",
    "===",
    " ",
    "\n",
    "\t",
    "%3D",
    "%3d",
    "%41",
    "%2B",
    "%2F",
    "%20",
    "%zz",
    "%",
    "%4",
    "-",
    "_",
    "!",
    ".",
    "#frag",
    ",",
    "é",
    "\u00a0",
    "\r\n",
    "\x0c",
]
MESSAGE_MEDIA = ["image/png", "image/jpeg", "image/gif", "image/webp"]


def body64(rng: random.Random) -> str:
    out = "".join(rng.choice(ALPHABET) for _ in range(rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16])))
    for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
        i = rng.randrange(len(out) + 1)
        out = out[:i] + rng.choice(NOISE) + out[i:]
    if rng.random() < 0.3:
        out += rng.choice(["=", "==", "===", "===="])
    return out


def pick(rng: random.Random, options: list[str]) -> str:
    """The first option (the well-formed one) half the time, any option otherwise."""
    return options[0] if rng.random() < 0.5 else rng.choice(options)


def data_url(rng: random.Random) -> str:
    return pick(rng, SCHEMES) + pick(rng, MIMES) + pick(rng, MARKERS) + pick(rng, [",", ",,", ""]) + body64(rng)


def external_urls() -> list[str]:
    urls = []
    for prefix in ["http://a/", "https://a/", "HTTP://a/", "httpx:", "http", "ftp://a/"]:
        for n in [0, 1, 100, 8191, 8192, 8193, 20000]:
            urls.append(prefix + "x" * max(0, n - len(prefix)))
    for unit in ["é", "中", "😀"]:
        for chars in [4095, 4096, 4097, 8191, 8192, 8193, 2730, 2731, 2048, 2049]:
            urls.append("http://" + unit * (chars - 7))
    return urls


def source_row(source: Any) -> list[Any]:
    url = source.url if source.url is not None else source.data_url
    shown = url if url is None or len(url) <= 200 else "sha1:" + hashlib.sha1(url.encode()).hexdigest()
    return [type(source).__name__, source.detail, source.path, shown]


def outcome(cls: Any, request: dict[str, Any]) -> list[Any]:
    try:
        converted = cls(json.dumps(request)).convert(dr.ConversionOptions())
    except Exception as error:
        return [type(error).__name__, str(error)]
    sources = [source_row(s) for m in converted.conversation.messages for s in (m.image_sources or [])]
    return ["ok", sources]


def requests(url: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "chat_image_url",
            {
                "model": MODEL,
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}],
            },
        ),
        (
            "chat_file_data",
            {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "file", "file_data": url}]}]},
        ),
        (
            "responses_input_image",
            {"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_image", "image_url": url}]}]},
        ),
        (
            "messages_url",
            {
                "model": MODEL,
                "max_tokens": 8,
                "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": url}}]}],
            },
        ),
    ]


LONG = "http://a/" + "x" * 8200
CHAT_PARTS = {
    "long": {"type": "image_url", "image_url": {"url": LONG}},
    "ftp": {"type": "image_url", "image_url": {"url": "ftp://x"}},
    "good": {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    "bad64": {"type": "image_url", "image_url": {"url": "data:image/png;base64,A"}},
    "file_id": {"type": "file", "file_id": "f"},
    "bad_file": {"type": "file", "file_data": "nope"},
    "text": {"type": "text", "text": "t"},
}
RESPONSES_PARTS = {
    "long": {"type": "input_image", "image_url": LONG},
    "ftp": {"type": "input_image", "image_url": "ftp://x"},
    "good": {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
    "bad64": {"type": "input_image", "image_url": "data:image/png;base64,A"},
    "file_id": {"type": "input_image", "file_id": "f"},
    "missing": {"type": "input_image"},
    "text": {"type": "input_text", "text": "t"},
}
MESSAGES_PARTS = {
    "long": {"type": "image", "source": {"type": "url", "url": LONG}},
    "ftp": {"type": "image", "source": {"type": "url", "url": "ftp://x"}},
    "good": {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
    "bad64": {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A"}},
    "file_id": {"type": "image", "source": {"type": "file", "file_id": "f"}},
    "text": {"type": "text", "text": "t"},
}


def ordering_requests() -> list[tuple[str, dict[str, Any]]]:
    """Two image parts in every order and role: which check reports first, and where."""
    out: list[tuple[str, dict[str, Any]]] = []
    for model in (MODEL, "DeepSeek-V4-Pro"):
        for a in CHAT_PARTS:
            for b in CHAT_PARTS:
                parts = [CHAT_PARTS[a], CHAT_PARTS[b]]
                for messages in (
                    [{"role": "system", "content": parts}],
                    [{"role": "user", "content": "x"}, {"role": "user", "content": parts}],
                    [{"role": "user", "content": "x"}, {"role": "assistant", "content": parts}],
                    [
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                            ],
                        },
                        {"role": "tool", "tool_call_id": "c", "content": parts},
                    ],
                ):
                    out.append(("chat_order", {"model": model, "messages": messages}))
        for a in RESPONSES_PARTS:
            for b in RESPONSES_PARTS:
                parts = [RESPONSES_PARTS[a], RESPONSES_PARTS[b]]
                for items in (
                    [{"role": "user", "content": "x"}, {"role": "user", "content": parts}],
                    [{"role": "user", "content": "x"}, {"role": "assistant", "content": parts}],
                    [
                        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                        {
                            "type": "function_call_output",
                            "call_id": "c",
                            "output": [p for p in parts if p["type"] != "input_text"] or "x",
                        },
                    ],
                ):
                    out.append(("responses_order", {"model": model, "input": items}))
        for a in MESSAGES_PARTS:
            for b in MESSAGES_PARTS:
                parts = [MESSAGES_PARTS[a], MESSAGES_PARTS[b]]
                for messages in (
                    [{"role": "user", "content": parts}],
                    [{"role": "user", "content": "x"}, {"role": "assistant", "content": parts}],
                    [
                        {"role": "user", "content": "x"},
                        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}]},
                        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": parts}]},
                    ],
                ):
                    out.append(("messages_order", {"model": model, "max_tokens": 8, "messages": messages}))
    return out


CLASSES = {"chat": dr.ChatCompletionRequest, "responses": dr.ResponsesRequest, "messages": dr.MessagesRequest}


def main() -> None:
    rng = random.Random(20250602)
    urls = external_urls()
    seen = set(urls)
    while len(urls) < 1500:
        url = data_url(rng)
        if url not in seen:
            seen.add(url)
            urls.append(url)
    rows = []
    for url in urls:
        for place, request in requests(url):
            rows.append({"place": place, "request": request, "outcome": outcome(CLASSES[place.split("_")[0]], request)})
    for _ in range(600):
        data, media = body64(rng), rng.choice(MESSAGE_MEDIA)
        request = {
            "model": MODEL,
            "max_tokens": 8,
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}],
                }
            ],
        }
        rows.append({"place": "messages_base64", "request": request, "outcome": outcome(dr.MessagesRequest, request)})
    for place, request in ordering_requests():
        rows.append({"place": place, "request": request, "outcome": outcome(CLASSES[place.split("_")[0]], request)})
    OUT.write_bytes(gzip.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0))
    accepted = sum(r["outcome"][0] == "ok" for r in rows)
    print(f"{len(rows)} requests ({accepted} accepted) -> {OUT}")


if __name__ == "__main__":
    main()
