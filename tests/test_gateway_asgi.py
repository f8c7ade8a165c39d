"""The gateway's own ASGI layer (no framework): HEAD on its GET routes, 405 with ``Allow``, a 404
for other paths, and the lifespan's ``failed`` events."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson

from deepseek_recipe.gateway import Gateway, GatewaySettings, create_app
from deepseek_recipe.gateway.asgi import Message
from tests.gateway_support import serving


def test_head_answers_a_get_route_without_its_body() -> None:
    with (
        serving(create_app(GatewaySettings(log_requests=False, store="none"))) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        for path in ("/health", "/ready", "/v1/models", "/metrics"):
            got, head = client.get(path), client.head(path)
            assert (got.status_code, head.status_code) == (200, 200), path
            assert head.content == b"", path
            assert head.headers["content-type"] == got.headers["content-type"], path
            if path != "/metrics":  # the metrics change between two scrapes
                assert head.headers["content-length"] == str(len(got.content)), path


def test_a_wrong_method_gets_405_naming_the_allowed_ones() -> None:
    with (
        serving(create_app(GatewaySettings(log_requests=False, store="none"))) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        post_only = client.get("/v1/chat/completions")
        assert post_only.status_code == 405
        assert post_only.headers["allow"] == "POST"
        assert post_only.json()["error"]["type"] == "invalid_request_error"
        get_only = client.post("/health", json={})
        assert get_only.status_code == 405
        assert get_only.headers["allow"] == "GET, HEAD"
        missing = client.get("/nowhere")
        assert missing.status_code == 404
        assert orjson.loads(missing.content)["error"]["message"] == "Not found"


class _Lifespan:
    """Drives one ASGI lifespan: startup, then shutdown, recording what the app answers."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[Message] = asyncio.Queue()
        self.answers: list[Message] = []

    async def run(self, app: Any) -> list[str]:
        for step in ("startup", "shutdown"):
            self.incoming.put_nowait({"type": f"lifespan.{step}"})

        async def send(message: Message) -> None:
            self.answers.append(message)

        await asyncio.wait_for(app({"type": "lifespan", "asgi": {"version": "3.0"}}, self.incoming.get, send), 30)
        return [answer["type"] for answer in self.answers]


class _FailingStart(Gateway):
    async def _started(self) -> None:
        raise RuntimeError("secret detail")


class _FailingClose(Gateway):
    async def aclose(self) -> None:
        await super().aclose()
        raise OSError("secret detail")


def test_the_lifespan_reports_what_failed_without_its_detail() -> None:
    settings = GatewaySettings(log_requests=False, store="none")
    assert asyncio.run(_Lifespan().run(Gateway(settings=settings))) == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]
    failing_start = _Lifespan()
    assert asyncio.run(failing_start.run(_FailingStart(settings=settings)))[0] == "lifespan.startup.failed"
    assert failing_start.answers[0]["message"] == "RuntimeError"
    failing_close = _Lifespan()
    assert asyncio.run(failing_close.run(_FailingClose(settings=settings))) == [
        "lifespan.startup.complete",
        "lifespan.shutdown.failed",
    ]
    assert failing_close.answers[1]["message"] == "OSError"
