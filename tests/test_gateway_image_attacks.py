"""V4.1 images as an attacker sends them: a key spelled with JSON escapes, image hosts that drip
or hang, pictures of 64 megapixels, redirects to other schemes. The gateway keeps serving
everyone else at its usual latency, refuses in the protocol's shape, and counts what it sent.

Latencies are compared with a baseline measured in the same test, never with absolute times.
"""

from __future__ import annotations

import http.server
import io
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from PIL import Image

import deepseek_recipe as dr
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from tests.gateway_support import ServerThread, serving, settle
from tests.test_gateway_images import chat_body, data_url, image_part, png, v41_tokenizer  # noqa: F401
from tests.test_image_fetch import Server, send

MODEL = "DeepSeek-V4.1-Flash"
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
JSON = {"content-type": "application/json"}

# Request bodies whose image keys are spelled with JSON escapes: the bytes never say "image".
ESCAPED: dict[str, str] = {
    "chat": '{"model": "%s", "messages": [{"role": "user", "content": [{"type": "\\u0069mage_url", '
    '"\\u0069mage_url": {"url": "%s"}}]}]}',
    "responses": '{"model": "%s", "input": [{"role": "user", "content": [{"type": "input_\\u0069mage", '
    '"\\u0069mage_url": "%s"}]}]}',
    "messages": '{"model": "%s", "max_tokens": 16, "messages": [{"role": "user", "content": '
    '[{"type": "\\u0069mage", "source": {"type": "url", "url": "%s"}}]}]}',
}


def resolver() -> dr.ImageResolver:
    fetcher = dr.ReqwestImageFetcher().with_allowed_networks(["127.0.0.1/32"])
    return dr.ImageResolver(fetcher, dr.OpenCvImagePreprocessor()).with_pixel_budget(1 << 27)


@pytest.fixture
def gateway_server(v41_tokenizer: dr.Tokenizer) -> Iterator[tuple[Gateway, ServerThread]]:  # noqa: F811
    frontend = Frontend(v41_tokenizer, image_resolver=resolver())
    gateway = Gateway(settings=GatewaySettings(), frontend=frontend, backend=DemoEngine(v41_tokenizer))
    with serving(gateway) as server:
        yield gateway, server


@pytest.fixture
def images() -> Iterator[Server]:
    server = Server()
    yield server
    server.close()


def dripping(stop: threading.Event) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    """A PNG that arrives a byte at a time, until ``stop`` (or half a minute)."""

    def drip(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "image/png")
        h.send_header("Content-Length", str(10 << 20))
        h.end_headers()
        data = png()
        deadline = time.monotonic() + 30
        for i in range(10 << 20):
            if stop.is_set() or time.monotonic() > deadline:
                h.close_connection = True
                return
            h.wfile.write(data[i : i + 1] or b"\0")
            h.wfile.flush()
            time.sleep(0.05)

    return drip


def hanging(stop: threading.Event) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    def hang(h: http.server.BaseHTTPRequestHandler) -> None:
        stop.wait(30)
        h.close_connection = True  # then hang up without an answer

    return hang


def latency(call: Callable[[], httpx.Response], times: int = 15) -> float:
    """The median wall time of ``call`` (each must answer 200)."""
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        response = call()
        spent.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text
    return statistics.median(spent)


def small_request(server: ServerThread) -> Callable[[], httpx.Response]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    return lambda: httpx.post(server.url + PATHS["chat"], json=body, timeout=20)


def test_a_dripping_image_host_does_not_stall_anyone_else(
    gateway_server: tuple[Gateway, ServerThread], images: Server
) -> None:
    """One request per protocol, its image key spelled with escapes, its image dripping in a
    byte at a time: a small request meanwhile is as fast as before, and so is /health."""
    _, server = gateway_server
    stop = threading.Event()
    images.routes["/drip.png"] = dripping(stop)
    small = small_request(server)
    health = lambda: httpx.get(server.url + "/health", timeout=20)  # noqa: E731
    baseline, baseline_health = latency(small), latency(health)
    with ThreadPoolExecutor(3) as pool:
        attacks: list[Future[httpx.Response]] = []
        for protocol, template in ESCAPED.items():
            body = (template % (MODEL, images.url("/drip.png"))).encode()
            assert b"image" not in body
            attacks.append(
                pool.submit(httpx.post, server.url + PATHS[protocol], content=body, headers=JSON, timeout=60)
            )
        try:
            assert settle(lambda: images.active == 3), "the three downloads are under way"
            during, during_health = latency(small), latency(health)
            assert images.active == 3, "the downloads were still dripping while we measured"
        finally:
            stop.set()
        statuses = [attack.result().status_code for attack in attacks]
    assert statuses == [400, 400, 400]  # the image never arrived whole
    assert during <= 20 * baseline, (during, baseline)
    assert during_health <= 20 * baseline_health, (during_health, baseline_health)


def test_hanging_image_hosts_cannot_take_the_threads_of_other_requests(
    gateway_server: tuple[Gateway, ServerThread], images: Server
) -> None:
    """45 requests whose image hosts never answer (more than the default thread pool's 40): a
    large request without images, prepared in a worker thread, is as fast as before."""
    gateway, server = gateway_server
    stop = threading.Event()
    images.routes["/hang.png"] = hanging(stop)
    big = {"model": MODEL, "messages": [{"role": "user", "content": "word " * 8000}], "max_tokens": 8}
    large = lambda: httpx.post(server.url + PATHS["chat"], json=big, timeout=20)  # noqa: E731
    baseline = latency(large, times=7)
    with ThreadPoolExecutor(45) as pool:
        body = chat_body(image_part(images.url("/hang.png")), max_tokens=8)
        attacks = [pool.submit(httpx.post, server.url + PATHS["chat"], json=body, timeout=60) for _ in range(45)]
        try:
            assert settle(lambda: images.active == gateway.settings.image_workers), "image work has its own pool"
            during = latency(large, times=7)
            assert images.active == gateway.settings.image_workers
        finally:
            stop.set()
        assert {attack.result().status_code for attack in attacks} == {400}
    assert images.most_active == gateway.settings.image_workers
    assert during <= 20 * baseline, (during, baseline)


@pytest.fixture(scope="module")
def huge_png() -> bytes:
    """8,000 × 8,000 pixels of one colour: 64 megapixels in a small file."""
    out = io.BytesIO()
    Image.new("L", (8000, 8000), 7).save(out, "PNG", optimize=False)
    return out.getvalue()


@pytest.mark.parametrize("protocol", sorted(PATHS))
def test_a_request_past_the_pixel_budget_is_refused_before_decoding(
    gateway_server: tuple[Gateway, ServerThread], huge_png: bytes, protocol: str
) -> None:
    _, server = gateway_server
    url = data_url(huge_png)
    if protocol == "chat":
        body: dict[str, Any] = chat_body(*[image_part(url)] * 3)
    elif protocol == "responses":
        content = [{"type": "input_image", "image_url": url}] * 3
        body = {"model": MODEL, "input": [{"role": "user", "content": content}]}
    else:
        source = {"type": "base64", "media_type": "image/png", "data": url.split(",", 1)[1]}
        body = {
            "model": MODEL,
            "max_tokens": 16,
            "messages": [{"role": "user", "content": [{"type": "image", "source": source}] * 3}],
        }
    response = httpx.post(server.url + PATHS[protocol], json=body, timeout=60)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["message"] == (
        f"Total image pixels exceed the limit: max {1 << 27} pixels per request, got {3 * 8000 * 8000}"
    )


@pytest.mark.parametrize("target", ["data:image/png;base64,aGVsbG8=", "mailto:a@example.com", "javascript:alert(1)"])
def test_a_redirect_to_another_scheme_is_a_400_and_counted_as_one(
    gateway_server: tuple[Gateway, ServerThread], images: Server, target: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, server = gateway_server
    images.routes["/moved.png"] = lambda h: send(h, 302, b"", headers={"Location": target})
    caplog.set_level("INFO", logger="deepseek_recipe.gateway")

    def log_lines() -> list[Any]:
        return [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]

    for count, (protocol, template) in enumerate(ESCAPED.items(), start=1):
        body = (template % (MODEL, images.url("/moved.png"))).encode()
        response = httpx.post(server.url + PATHS[protocol], content=body, headers=JSON, timeout=30)
        assert response.status_code == 400, response.text
        data = response.json()
        message = data["error"]["message"]
        assert message.endswith(f"Failed to download image from {images.url('/moved.png')}")
        if protocol == "messages":
            assert data["type"] == "error" and data["error"]["type"] == "invalid_request_error"
        # The request's log line is written once its answer has gone: wait for it.
        assert settle(lambda: len(log_lines()) >= count)
        assert log_lines()[-1]["status"] == 400
    metrics = httpx.get(server.url + "/metrics").text
    for protocol in PATHS:
        assert f'deepseek_recipe:requests_total{{protocol="{protocol}",status="400"}} 1.0' in metrics
    assert 'status="200"' not in metrics and 'status="500"' not in metrics


def test_count_tokens_counts_the_tokens_the_engine_gets(gateway_server: tuple[Gateway, ServerThread]) -> None:
    _, server = gateway_server
    source = {"type": "base64", "media_type": "image/png", "data": data_url(png()).split(",", 1)[1]}
    body = {
        "model": MODEL,
        "max_tokens": 16,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is it?"}, {"type": "image", "source": source}]}
        ],
    }
    counted = httpx.post(server.url + "/v1/messages/count_tokens", json=body, timeout=30)
    assert counted.status_code == 200, counted.text
    served = httpx.post(server.url + PATHS["messages"], json=body, timeout=30)
    assert served.status_code == 200, served.text
    assert counted.json()["input_tokens"] == served.json()["usage"]["input_tokens"] > 194
