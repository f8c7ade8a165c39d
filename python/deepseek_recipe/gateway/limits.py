"""Limits per API key: requests at once, requests per minute, tokens per minute.

Keys and their limits come from the settings file's ``[keys.<name>]`` tables. A request with a
limited key is admitted once its body is in: it takes one of the key's concurrent slots and one
request from its per-minute budget. Its prompt tokens, counted exactly once it is encoded, are
taken from the token budget (a prompt the budget cannot cover now gets 429); its completion
tokens are charged as they stream, and may take the budget below zero, which makes the key's
next requests wait. Budgets refill continuously (a token bucket holding a minute's worth).

A refusal is 429 in the protocol's shape, with ``retry-after`` (whole seconds) and OpenAI's
``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers; admitted requests carry the
same headers.

Counters live in this process (:class:`LocalCounters`) unless ``limits_url`` names a Redis
server, where several gateway processes and machines share them (``limits_redis.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from deepseek_recipe.gateway.errors import GatewayError
from deepseek_recipe.gateway.settings import ApiKey

Limit = Literal["concurrent", "requests", "tokens"]


@dataclass(frozen=True)
class Verdict:
    """A counter's answer: ``allowed``, else which ``limit`` refused and when to retry; and the
    budgets as they stand (``None`` for a limit the key does not have)."""

    allowed: bool
    limit: Limit | None = None
    retry_after: float = 0.0
    requests_remaining: float | None = None
    requests_reset: float = 0.0
    tokens_remaining: float | None = None
    tokens_reset: float = 0.0
    #: The admission's lease in the shared counters (``None``: counted in this process).
    lease: str | None = None


class Bucket:
    """A token bucket holding ``per_minute`` units, refilled at ``per_minute`` a minute."""

    __slots__ = ("level", "per_minute", "stamp")

    def __init__(self, per_minute: int, now: float) -> None:
        self.per_minute = per_minute
        self.level = float(per_minute)
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(float(self.per_minute), self.level + (now - self.stamp) * self.per_minute / 60.0)
        self.stamp = now

    def wait(self, amount: float) -> float:
        """Seconds until the bucket holds ``amount`` (at most a full bucket)."""
        missing = min(amount, float(self.per_minute)) - self.level
        return max(missing, 0.0) * 60.0 / self.per_minute

    def reset(self) -> float:
        """Seconds until the bucket is full again."""
        return self.wait(float(self.per_minute))


class _KeyState:
    __slots__ = ("concurrent", "requests", "tokens")

    def __init__(self, limits: ApiKey, now: float) -> None:
        self.concurrent = 0
        self.requests = Bucket(limits.requests_per_minute, now) if limits.requests_per_minute else None
        self.tokens = Bucket(limits.tokens_per_minute, now) if limits.tokens_per_minute else None


class Counters(Protocol):
    """Where the counters live: this process, or a server several processes share."""

    async def admit(self, name: str, limits: ApiKey) -> Verdict: ...

    async def take_tokens(self, name: str, limits: ApiKey, amount: int, admitted: Verdict) -> Verdict: ...

    def charge(self, name: str, limits: ApiKey, amount: int, admitted: Verdict) -> None: ...

    def release(self, name: str, limits: ApiKey, admitted: Verdict) -> None: ...

    async def maintain(self) -> None: ...

    async def aclose(self) -> None: ...


class LocalCounters:
    """Every key's counters in this process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._keys: dict[str, _KeyState] = {}

    def _state(self, name: str, limits: ApiKey) -> tuple[_KeyState, float]:
        now = self._clock()
        state = self._keys.get(name)
        if state is None:
            state = self._keys[name] = _KeyState(limits, now)
        for bucket in (state.requests, state.tokens):
            if bucket is not None:
                bucket.refill(now)
        return state, now

    async def admit(self, name: str, limits: ApiKey) -> Verdict:
        """Take a concurrent slot and a request, unless the key is at a limit (its token
        budget spent counts as one)."""
        state, _ = self._state(name, limits)
        requests, tokens = state.requests, state.tokens
        if limits.concurrent_requests is not None and state.concurrent >= limits.concurrent_requests:
            return _verdict(state, False, "concurrent", 1.0)
        if requests is not None and requests.level < 1:
            return _verdict(state, False, "requests", requests.wait(1))
        if tokens is not None and tokens.level <= 0:
            return _verdict(state, False, "tokens", tokens.wait(1))
        state.concurrent += 1
        if requests is not None:
            requests.level -= 1
        return _verdict(state, True)

    async def take_tokens(self, name: str, limits: ApiKey, amount: int, admitted: Verdict | None = None) -> Verdict:
        """Take a prompt's ``amount`` tokens, if the budget holds them now."""
        state, _ = self._state(name, limits)
        tokens = state.tokens
        if tokens is None:
            return _verdict(state, True)
        if tokens.level < amount:
            return _verdict(state, False, "tokens", tokens.wait(amount))
        tokens.level -= amount
        return _verdict(state, True)

    def charge(self, name: str, limits: ApiKey, amount: int, admitted: Verdict | None = None) -> None:
        """Completion tokens: taken whatever the budget holds."""
        state, _ = self._state(name, limits)
        if state.tokens is not None:
            state.tokens.level -= amount

    def release(self, name: str, limits: ApiKey, admitted: Verdict | None = None) -> None:
        """A request of the key's has ended."""
        state, _ = self._state(name, limits)
        state.concurrent = max(state.concurrent - 1, 0)

    async def maintain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _verdict(state: _KeyState, allowed: bool, limit: Limit | None = None, retry_after: float = 0.0) -> Verdict:
    requests, tokens = state.requests, state.tokens
    return Verdict(
        allowed,
        limit,
        retry_after,
        requests.level if requests is not None else None,
        requests.reset() if requests is not None else 0.0,
        tokens.level if tokens is not None else None,
        tokens.reset() if tokens is not None else 0.0,
    )


class Admission:
    """One admitted request of a limited key: charge its tokens, then release it (once)."""

    __slots__ = ("_admitted", "_counters", "_limits", "_name", "_released", "verdict")

    def __init__(self, counters: Counters, name: str, limits: ApiKey, verdict: Verdict) -> None:
        self._counters, self._name, self._limits, self.verdict = counters, name, limits, verdict
        self._admitted = verdict
        self._released = False

    async def prompt(self, tokens: int) -> None:
        """Take the prompt's tokens (429 when the budget cannot cover them now)."""
        verdict = await self._counters.take_tokens(self._name, self._limits, tokens, self._admitted)
        if not verdict.allowed:
            if self._limits.tokens_per_minute is not None and tokens > self._limits.tokens_per_minute:
                message = (
                    f"The prompt has {tokens} tokens, more than this key's {self._limits.tokens_per_minute} "
                    "tokens per minute"
                )
                raise rate_limited(self._limits, verdict, message)
            raise rate_limited(self._limits, verdict)
        self.verdict = verdict

    def completion(self, tokens: int) -> None:
        self._counters.charge(self._name, self._limits, tokens, self._admitted)

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._counters.release(self._name, self._limits, self._admitted)

    def headers(self) -> list[tuple[bytes, bytes]]:
        return ratelimit_headers(self._limits, self.verdict)


class KeyLimits:
    """The limits of every limited key, over ``counters``."""

    def __init__(self, keys: dict[str, ApiKey], counters: Counters | None = None) -> None:
        self._by_key = {
            entry.key.get_secret_value().encode(): (name, entry) for name, entry in keys.items() if entry.limited
        }
        self.counters = counters if counters is not None else LocalCounters()

    async def admit(self, key: bytes | None) -> Admission | None:
        """Admit a request carrying ``key`` (``None``: the key has no limits), or raise 429."""
        found = self._by_key.get(key) if key is not None else None
        if found is None:
            return None
        name, limits = found
        verdict = await self.counters.admit(name, limits)
        if not verdict.allowed:
            raise rate_limited(limits, verdict)
        return Admission(self.counters, name, limits, verdict)

    async def maintain(self) -> None:
        """Keep the counters' leases alive while the server runs (shared counters)."""
        await self.counters.maintain()

    async def aclose(self) -> None:
        await self.counters.aclose()


def limits_from_settings(keys: dict[str, ApiKey], url: str | None = None) -> KeyLimits | None:
    """The per-key limits of ``keys`` (``None`` when no key has any: nothing is counted),
    counted in this process, or in the Redis server at ``url``."""
    if not any(entry.limited for entry in keys.values()):
        return None
    if url is None:
        return KeyLimits(keys)
    from deepseek_recipe.gateway.limits_redis import RedisCounters

    return KeyLimits(keys, RedisCounters(url))


_MESSAGES: dict[Limit, str] = {
    "concurrent": "Too many requests in flight for this API key; retry when one has finished",
    "requests": "Rate limit reached for requests per minute on this API key",
    "tokens": "Rate limit reached for tokens per minute on this API key",
}


def rate_limited(limits: ApiKey, verdict: Verdict, message: str | None = None) -> GatewayError:
    """The 429 for a refusal, with ``retry-after`` and the rate-limit headers."""
    assert verdict.limit is not None
    retry = max(1, math.ceil(verdict.retry_after))
    headers = [(b"retry-after", str(retry).encode()), *ratelimit_headers(limits, verdict)]
    return GatewayError("rate_limited", message or _MESSAGES[verdict.limit], headers)


def ratelimit_headers(limits: ApiKey, verdict: Verdict) -> list[tuple[bytes, bytes]]:
    """OpenAI's ``x-ratelimit-*`` headers for the budgets the key has."""
    headers: list[tuple[bytes, bytes]] = []
    for kind, limit, remaining, reset in (
        ("requests", limits.requests_per_minute, verdict.requests_remaining, verdict.requests_reset),
        ("tokens", limits.tokens_per_minute, verdict.tokens_remaining, verdict.tokens_reset),
    ):
        if limit is None or remaining is None:
            continue
        headers += [
            (f"x-ratelimit-limit-{kind}".encode(), str(limit).encode()),
            (f"x-ratelimit-remaining-{kind}".encode(), str(max(int(remaining), 0)).encode()),
            (f"x-ratelimit-reset-{kind}".encode(), duration(reset).encode()),
        ]
    return headers


def duration(seconds: float) -> str:
    """``seconds`` as OpenAI writes a reset time: ``0s``, ``250ms``, ``1.5s``, ``6m0s``."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    if seconds < 60:
        return f"{round(seconds, 3):g}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest}s"
