"""Limits per API key, counted in this process: a burst over each limit gets 429 in each
protocol's shape (as the official SDKs raise it), with ``retry-after`` and OpenAI's
``x-ratelimit-*`` headers, while other keys go on being served."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import anthropic
import httpx
import openai
import pytest

import deepseek_recipe as dr
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.gateway.limits import Bucket, duration
from tests.gateway_support import ServerThread, check_response, serving

MODEL = "DeepSeek-V4-Pro"
PROTOCOLS = ["chat", "responses", "messages"]
KEYS: dict[str, Any] = {
    "concurrent": {"key": "sk-concurrent", "concurrent_requests": 2},
    "concurrent-twin": {"key": "sk-concurrent-twin", "concurrent_requests": 2},
    "requests": {"key": "sk-requests", "requests_per_minute": 3},
    "requests-twin": {"key": "sk-requests-twin", "requests_per_minute": 3},
    "tokens": {"key": "sk-tokens", "tokens_per_minute": 120},
    "tokens-twin": {"key": "sk-tokens-twin", "tokens_per_minute": 120},
}


@pytest.fixture(scope="session")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


@pytest.fixture
def server(frontend: Frontend) -> Iterator[ServerThread]:
    settings = GatewaySettings.model_validate(
        {"log_requests": False, "api_keys": ["sk-plain"], "keys": KEYS, "demo_token_delay": 0.02}
    )
    with serving(Gateway(settings=settings, frontend=frontend)) as running:
        yield running


def call(url: str, protocol: str, key: str, text: str = "Say hi.", max_tokens: int = 8) -> dict[str, Any]:
    """One request through the protocol's SDK; its usage as ``{"input", "output"}``. Each
    client is closed with its connection."""
    if protocol == "messages":
        with anthropic.Anthropic(base_url=url, api_key=key, max_retries=0) as claude:
            message = claude.messages.create(
                model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": text}]
            )
        return {"input": message.usage.input_tokens, "output": message.usage.output_tokens}
    with openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0) as oai:
        if protocol == "chat":
            completion = oai.chat.completions.create(
                model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": text}]
            )
            assert completion.usage is not None
            return {"input": completion.usage.prompt_tokens, "output": completion.usage.completion_tokens}
        response = oai.responses.create(model=MODEL, input=text, max_output_tokens=max_tokens, store=False)
    assert response.usage is not None
    return {"input": response.usage.input_tokens, "output": response.usage.output_tokens}


def refused(protocol: str, attempt: Callable[[], object]) -> tuple[Mapping[str, str], str]:
    """``attempt()`` fails with the SDK's RateLimitError, its body in the protocol's shape;
    returns the response's headers and the error's message."""
    if protocol == "messages":
        with pytest.raises(anthropic.RateLimitError) as claude_error:
            attempt()
        body = claude_error.value.body
        assert isinstance(body, dict) and body["type"] == "error"
        assert body["error"]["type"] == "rate_limit_error" and body["error"]["message"]
        status, headers, message = claude_error.value.status_code, claude_error.value.response.headers, body["error"]
    else:
        with pytest.raises(openai.RateLimitError) as oai_error:
            attempt()
        assert oai_error.value.code == "rate_limit_exceeded" and oai_error.value.type == "rate_limit_error"
        status, headers, message = oai_error.value.status_code, oai_error.value.response.headers, oai_error.value.body
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert isinstance(message, dict) and isinstance(message["message"], str)
    return headers, message["message"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_concurrent_requests_per_key(server: ServerThread, protocol: str) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Tell me a long story."}], "stream": True}
    headers = {"authorization": "Bearer sk-concurrent"}
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", server.url + "/v1/chat/completions", json=body, headers=headers) as first,
        client.stream("POST", server.url + "/v1/chat/completions", json=body, headers=headers) as second,
    ):
        assert first.status_code == second.status_code == 200
        refused(protocol, lambda: call(server.url, protocol, "sk-concurrent"))
        # Other keys are served meanwhile: one with the same limit, one without limits.
        call(server.url, protocol, "sk-concurrent-twin")
        call(server.url, protocol, "sk-plain")
    call(server.url, protocol, "sk-concurrent")  # the slots are free again


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_requests_per_minute(server: ServerThread, protocol: str) -> None:
    for _ in range(3):
        call(server.url, protocol, "sk-requests")
    headers, _ = refused(protocol, lambda: call(server.url, protocol, "sk-requests"))
    assert headers["x-ratelimit-limit-requests"] == "3"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert headers["x-ratelimit-reset-requests"].endswith("s")
    assert 1 <= int(headers["retry-after"]) <= 20  # one request back in 20 s
    call(server.url, protocol, "sk-requests-twin")
    call(server.url, protocol, "sk-plain")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tokens_per_minute_count_prompt_and_completion(server: ServerThread, protocol: str) -> None:
    used: list[int] = []
    prompt = 0
    for _ in range(20):
        try:
            usage = call(server.url, protocol, "sk-tokens", max_tokens=16)
        except (openai.RateLimitError, anthropic.RateLimitError):
            break
        used.append(usage["input"] + usage["output"])
        prompt = usage["input"]
    else:
        pytest.fail("the token budget was never spent")
    # Every admitted request found budget left (the budget refills by 2 tokens a second), and
    # the refusal came once it was spent or could not hold the next prompt.
    assert used and sum(used[:-1]) < 120 + 10 and sum(used) > 120 - 40
    headers, _ = refused(protocol, lambda: call(server.url, protocol, "sk-tokens"))
    assert headers["x-ratelimit-limit-tokens"] == "120"
    # What is left cannot hold the prompt (counted exactly: the usage's input tokens).
    assert int(headers["x-ratelimit-remaining-tokens"]) < prompt
    call(server.url, protocol, "sk-tokens-twin")
    call(server.url, protocol, "sk-plain")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_prompt_over_the_whole_budget(server: ServerThread, protocol: str) -> None:
    _, message = refused(protocol, lambda: call(server.url, protocol, "sk-tokens-twin", text="word " * 200))
    assert "tokens, more than this key's 120 tokens per minute" in message
    call(server.url, protocol, "sk-tokens-twin")  # a prompt that fits still does


def test_admitted_requests_carry_the_rate_limit_headers(server: ServerThread) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    for stream in (False, True):
        response = httpx.post(
            server.url + "/v1/chat/completions",
            json={**body, "stream": stream},
            headers={"authorization": "Bearer sk-requests"},
            timeout=30,
        )
        assert response.status_code == 200
        assert response.headers["x-ratelimit-limit-requests"] == "3"
        assert response.headers["x-ratelimit-remaining-requests"] == str(2 - stream)
        if not stream:
            check_response("chat", response.content)
    plain = httpx.post(server.url + "/v1/chat/completions", json=body, headers={"x-api-key": "sk-plain"}, timeout=30)
    assert "x-ratelimit-limit-requests" not in plain.headers


def test_buckets_refill_over_the_minute() -> None:
    bucket = Bucket(60, now=0.0)
    bucket.level = -30.0
    assert bucket.wait(1) == pytest.approx(31.0)
    bucket.refill(31.0)
    assert bucket.level == pytest.approx(1.0)
    bucket.refill(1000.0)
    assert bucket.level == 60.0  # never more than a minute's worth
    assert [duration(s) for s in (0, 0.25, 1.5, 360)] == ["0s", "250ms", "1.5s", "6m0s"]
