"""V4.1 images through the gateway: resolved before the engine call, counted into usage and the
token budget, passed to engines that take them, and refused in each protocol's error shape.

The default DeepSeek V4 tokenizer cannot encode V4.1 prompts (it has no ``<｜System｜>``), so
these tests build a V4.1 tokenizer the legitimate way for a fixture: the V4 ``tokenizer.json``
with the V4.1 template token added to its added vocabulary.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image

import deepseek_recipe as dr
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.backends.sglang import SGLangBackend
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.fake_engines import FakeEngine
from tests.gateway_support import ServerThread, check_response, serving
from tests.test_image_fetch import Server, send

MODEL = "DeepSeek-V4.1-Flash"


@pytest.fixture(scope="module")
def v41_tokenizer(tokenizer_json: dict[str, Any]) -> dr.Tokenizer:
    data = json.loads(json.dumps(tokenizer_json))
    taken = max(t["id"] for t in data["added_tokens"])
    data["added_tokens"].append(
        {
            "id": taken + 1,
            "content": "<｜System｜>",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
    )
    return dr.Tokenizer.from_str(json.dumps(data))


def png(width: int = 50, height: int = 40) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 200, 10)).save(out, "PNG")
    return out.getvalue()


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


LOOPBACK_RESOLVER = dr.ImageResolver(
    dr.ReqwestImageFetcher().with_allowed_networks(["127.0.0.1/32"]), dr.OpenCvImagePreprocessor()
)


@pytest.fixture(scope="module")
def demo_gateway(v41_tokenizer: dr.Tokenizer) -> Iterator[ServerThread]:
    frontend = Frontend(v41_tokenizer, image_resolver=LOOPBACK_RESOLVER)
    gateway = Gateway(
        settings=GatewaySettings(log_requests=False), frontend=frontend, backend=DemoEngine(v41_tokenizer)
    )
    with serving(gateway) as server:
        yield server


def chat_body(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    content = [{"type": "text", "text": "What is this?"}, *parts]
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **extra}


def image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def test_an_image_reaches_the_engine_and_its_tokens_the_usage(
    demo_gateway: ServerThread, v41_tokenizer: dr.Tokenizer
) -> None:
    frontend = Frontend(v41_tokenizer, image_resolver=LOOPBACK_RESOLVER)
    body = chat_body(image_part(data_url(png())))
    prepared = frontend.prepare("chat", json.dumps(body))
    assert prepared.images is not None and [(i.width, i.height) for i in prepared.images.images] == [(616, 490)]
    assert prepared.image_tokens == 194 - 1
    reply = check_response("chat", httpx.post(demo_gateway.url + "/v1/chat/completions", json=body, timeout=60).content)
    assert "I received 1 image" in reply["choices"][0]["message"]["content"]
    assert reply["usage"]["prompt_tokens"] == len(prepared.prompt_ids) + 193


def test_images_count_into_the_token_budget(v41_tokenizer: dr.Tokenizer) -> None:
    body = chat_body(image_part(data_url(png())))
    plain = Frontend(v41_tokenizer, context_limit=100_000).prepare("chat", json.dumps(chat_body()))
    with_image = Frontend(v41_tokenizer, context_limit=100_000).prepare("chat", json.dumps(body))
    assert plain.images is None and plain.image_tokens == 0
    # One placeholder in the prompt, 194 tokens in the engine's input.
    assert len(with_image.prompt_ids) + with_image.image_tokens == len(plain.prompt_ids) + 1 + 193
    limit = len(with_image.prompt_ids) + 100
    with pytest.raises(dr.ConversionError, match="maximum context length"):
        Frontend(v41_tokenizer, context_limit=limit).prepare("chat", json.dumps(body))


def test_a_url_image_is_fetched_and_the_default_rule_refuses_loopback(
    demo_gateway: ServerThread, v41_tokenizer: dr.Tokenizer
) -> None:
    images = Server()
    try:
        images.routes["/cat.png"] = lambda h: send(h, 200, png(300, 200))
        body = chat_body(image_part(images.url("/cat.png")))
        reply = httpx.post(demo_gateway.url + "/v1/chat/completions", json=body, timeout=60)
        assert reply.status_code == 200 and images.hits == ["/cat.png"]
        # A frontend with the default fetcher refuses the same request without connecting.
        default = Frontend(v41_tokenizer)
        with pytest.raises(dr.ImageError) as info:
            default.prepare("chat", json.dumps(body))
        assert info.value.kind == "DestinationRejected"
        assert images.hits == ["/cat.png"]
    finally:
        images.close()


@pytest.mark.parametrize(
    "protocol, path, body",
    [
        ("chat", "/v1/chat/completions", chat_body(image_part("data:image/png;base64,aGVsbG8="))),
        (
            "responses",
            "/v1/responses",
            {
                "model": MODEL,
                "input": [
                    {
                        "role": "user",
                        "content": [{"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8="}],
                    }
                ],
            },
        ),
        (
            "messages",
            "/v1/messages",
            {
                "model": MODEL,
                "max_tokens": 64,
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="},
                            }
                        ],
                    }
                ],
            },
        ),
    ],
)
def test_image_errors_answer_in_each_protocols_shape(
    demo_gateway: ServerThread, protocol: str, path: str, body: dict[str, Any]
) -> None:
    reply = httpx.post(demo_gateway.url + path, json=body, timeout=60)
    assert reply.status_code == 400
    error = reply.json()
    if protocol == "messages":
        assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
        message = error["error"]["message"]
    else:
        assert error["error"]["type"] == "invalid_request_error"
        message = error["error"]["message"]
    assert "unsupported image" in message


def test_sglang_receives_the_images_as_webp_data_urls(v41_tokenizer: dr.Tokenizer) -> None:
    engine = FakeEngine(v41_tokenizer, kind="sglang", script=[v41_tokenizer.encode("A green box.")])
    frontend = Frontend(v41_tokenizer)
    body = chat_body(image_part(data_url(png())), image_part(data_url(png(10, 10))))
    with serving(engine) as engine_http:
        gateway = Gateway(
            settings=GatewaySettings(log_requests=False), frontend=frontend, backend=SGLangBackend(engine_http.url)
        )
        with serving(gateway) as server:
            reply = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200
    sent = engine.requests[-1]
    assert len(sent["image_data"]) == 2
    sizes = []
    for url in sent["image_data"]:
        assert url.startswith("data:image/webp;base64,")
        sizes.append(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size)
    assert sizes == [(616, 490), (546, 546)]


def test_an_engine_without_images_refuses_them(v41_tokenizer: dr.Tokenizer) -> None:
    from deepseek_recipe.backends.completions import CompletionsBackend

    frontend = Frontend(v41_tokenizer)
    gateway = Gateway(
        settings=GatewaySettings(log_requests=False),
        frontend=frontend,
        backend=CompletionsBackend("http://127.0.0.1:9"),
    )
    with serving(gateway) as server:
        reply = httpx.post(server.url + "/v1/chat/completions", json=chat_body(image_part(data_url(png()))), timeout=60)
    assert reply.status_code == 400 and "does not take images" in reply.json()["error"]["message"]
