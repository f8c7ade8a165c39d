"""Per-key limits shared by several gateway processes and machines through Redis (the ``redis``
extra; ``limits_url = "redis://…"``).

Each decision is one Lua script run on the server (registered once, then called by its SHA:
``EVALSHA``), so processes never read a counter, decide, and write it back from Python:

- a key's budgets are token buckets in hashes (``level``, ``stamp``), refilled by the
  server's own clock (``TIME``), so machines whose clocks differ agree; a bucket expires once
  it would be full again (an absent bucket is a full one);
- its requests in flight are leases in a sorted set (score: when the lease expires). A process
  renews its leases every :data:`LEASE_RENEW` seconds while the request runs and removes
  them when it ends; a process that dies leaves leases that expire within :data:`LEASE_TTL`.

Keys are ``deepseek-recipe:limits:{<name>}:<counter>``, the name in braces so that a key's
counters share a Redis Cluster slot; the API key itself is never stored.

When Redis cannot be reached (a restart, a network fault) the gateway does not fail requests:
it logs a warning and counts in this process instead, as if no ``limits_url`` were set, and tries
Redis again :data:`RETRY_AFTER` seconds later; once Redis answers, it says so and shares again.
"""

from __future__ import annotations

import logging
import math
import secrets
import time

import anyio
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from deepseek_recipe.gateway.limits import Limit, LocalCounters, Verdict
from deepseek_recipe.gateway.settings import ApiKey

logger = logging.getLogger("deepseek_recipe.gateway")

LEASE_TTL = 30.0
"""Seconds a request's concurrency lease lasts unless renewed."""
LEASE_RENEW = 10.0
"""Seconds between renewals of the leases of requests still running."""
RETRY_AFTER = 1.0
"""Seconds the gateway counts in-process before it tries an unreachable Redis again."""
TIMEOUT = 0.5
"""Seconds a Redis command (or connecting) may take before it counts as a failure."""
FLUSH_INTERVAL = 0.05
"""Seconds completion tokens gather in this process before they are charged to Redis."""

# Shared by both scripts: refill a bucket hash to the server's time; its level and the time.
_BUCKET = """
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function refill(key, rate, at)
  local v = redis.call('HMGET', key, 'level', 'stamp')
  local level, stamp = tonumber(v[1]), tonumber(v[2])
  if level == nil or stamp == nil then return rate end
  return math.min(rate, level + math.max(at - stamp, 0) * rate / 60)
end
local function store(key, rate, level, at)
  redis.call('HSET', key, 'level', tostring(level), 'stamp', tostring(at))
  redis.call('EXPIRE', key, math.ceil((rate - level) * 60 / rate) + 1)
end
"""

# KEYS: leases, requests, tokens. ARGV: concurrent, rpm, tpm (0: none), lease id, lease ttl.
# Returns {verdict, requests level, tokens level}: verdict "ok" or the limit that refused.
_ADMIT = (
    _BUCKET
    + """
local at = now()
local concurrent, rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local requests = rpm > 0 and refill(KEYS[2], rpm, at) or 0
local tokens = tpm > 0 and refill(KEYS[3], tpm, at) or 0
local verdict = 'ok'
if concurrent > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', at)
  if redis.call('ZCARD', KEYS[1]) >= concurrent then verdict = 'concurrent' end
end
if verdict == 'ok' and rpm > 0 and requests < 1 then verdict = 'requests' end
if verdict == 'ok' and tpm > 0 and tokens <= 0 then verdict = 'tokens' end
if verdict == 'ok' then
  if concurrent > 0 then
    local ttl = tonumber(ARGV[5])
    redis.call('ZADD', KEYS[1], at + ttl, ARGV[4])
    redis.call('EXPIRE', KEYS[1], math.ceil(ttl) + 1)
  end
  if rpm > 0 then requests = requests - 1 end
end
if rpm > 0 then store(KEYS[2], rpm, requests, at) end
if tpm > 0 then store(KEYS[3], tpm, tokens, at) end
return {verdict, tostring(requests), tostring(tokens)}
"""
)

# KEYS: tokens. ARGV: tpm, amount, force (1: take it whatever the level). Returns {taken, level}.
_TAKE = (
    _BUCKET
    + """
local at = now()
local tpm, amount, force = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local tokens = refill(KEYS[1], tpm, at)
local taken = 0
if force or tokens >= amount then
  tokens = tokens - amount
  taken = 1
end
store(KEYS[1], tpm, tokens, at)
return {taken, tostring(tokens)}
"""
)

# KEYS: leases. ARGV: ttl, then lease ids. Extends the leases that still exist.
_RENEW = """
local t = redis.call('TIME')
local until_ = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', until_, ARGV[i]) end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1])) + 1)
return 1
"""


def _keys(name: str) -> tuple[str, str, str]:
    base = f"deepseek-recipe:limits:{{{name}}}:"
    return base + "concurrent", base + "requests", base + "tokens"


class RedisCounters:
    """Counters in the Redis server at ``url``, falling back to this process's (module doc)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._redis = Redis.from_url(
            url,
            socket_timeout=TIMEOUT,
            socket_connect_timeout=TIMEOUT,
            retry=Retry(NoBackoff(), 0),
            decode_responses=True,
        )
        self._admit = self._redis.register_script(_ADMIT)
        self._take = self._redis.register_script(_TAKE)
        self._renew = self._redis.register_script(_RENEW)
        self.local = LocalCounters()
        self._down_until = 0.0
        self._down = False
        #: Leases of requests running now, by key name.
        self._leases: dict[str, set[str]] = {}
        self._pending: dict[str, tuple[ApiKey, int]] = {}
        self._released: list[tuple[str, str]] = []

    # -- health -------------------------------------------------------------------------------

    def _usable(self) -> bool:
        return not self._down or time.monotonic() >= self._down_until

    def _failed(self, error: Exception) -> None:
        if not self._down:
            logger.warning(
                "shared limits: Redis cannot be reached (%s); counting in this process until it answers",
                type(error).__name__,
            )
        self._down = True
        self._down_until = time.monotonic() + RETRY_AFTER

    def _answered(self) -> None:
        if self._down:
            logger.warning("shared limits: Redis answers again; counting there")
            self._down = False

    # -- the counters ---------------------------------------------------------------------------

    async def admit(self, name: str, limits: ApiKey) -> Verdict:
        if self._usable():
            lease = secrets.token_hex(8)
            try:
                answer = await self._admit(
                    keys=list(_keys(name)),
                    args=[
                        limits.concurrent_requests or 0,
                        limits.requests_per_minute or 0,
                        limits.tokens_per_minute or 0,
                        lease,
                        LEASE_TTL,
                    ],
                )
            except RedisError as error:
                self._failed(error)
            else:
                self._answered()
                verdict, requests, tokens = answer[0], float(answer[1]), float(answer[2])
                if verdict == "ok":
                    if limits.concurrent_requests is not None:
                        self._leases.setdefault(name, set()).add(lease)
                    return _verdict(limits, True, None, requests, tokens, lease)
                limit: Limit = verdict
                return _verdict(limits, False, limit, requests, tokens)
        return await self.local.admit(name, limits)

    async def take_tokens(self, name: str, limits: ApiKey, amount: int, admitted: Verdict) -> Verdict:
        if limits.tokens_per_minute is None:
            return admitted
        if admitted.lease is not None and self._usable():
            try:
                taken, level = await self._take(keys=[_keys(name)[2]], args=[limits.tokens_per_minute, amount, 0])
            except RedisError as error:
                self._failed(error)
            else:
                self._answered()
                tokens = float(level)
                if taken:
                    return _verdict(limits, True, None, admitted.requests_remaining, tokens, admitted.lease)
                return _verdict(limits, False, "tokens", admitted.requests_remaining, tokens, admitted.lease, amount)
        return await self.local.take_tokens(name, limits, amount)

    def charge(self, name: str, limits: ApiKey, amount: int, admitted: Verdict) -> None:
        if limits.tokens_per_minute is None:
            return
        if admitted.lease is None:
            self.local.charge(name, limits, amount)
            return
        _, pending = self._pending.get(name, (limits, 0))
        self._pending[name] = (limits, pending + amount)

    def release(self, name: str, limits: ApiKey, admitted: Verdict) -> None:
        if admitted.lease is None:
            self.local.release(name, limits)
            return
        if limits.concurrent_requests is not None:
            self._leases.get(name, set()).discard(admitted.lease)
            self._released.append((name, admitted.lease))

    # -- in the background ----------------------------------------------------------------------

    async def maintain(self) -> None:
        """Charge completion tokens and end leases every :data:`FLUSH_INTERVAL` (a slot is free
        for other processes that long after its request ended); renew the
        leases of running requests every :data:`LEASE_RENEW` seconds."""
        renewed = time.monotonic()
        while True:
            await anyio.sleep(FLUSH_INTERVAL)
            await self._flush()
            if time.monotonic() - renewed >= LEASE_RENEW:
                renewed = time.monotonic()
                await self._renew_leases()

    async def _flush(self) -> None:
        released, self._released = self._released, []
        pending, self._pending = self._pending, {}
        if not released and not pending:
            return
        try:
            for name, lease in released:
                await self._redis.zrem(_keys(name)[0], lease)
            for name, (limits, amount) in pending.items():
                await self._take(keys=[_keys(name)[2]], args=[limits.tokens_per_minute or 0, amount, 1])
        except RedisError as error:
            # Leases left behind expire; tokens not charged there are charged here meanwhile.
            self._failed(error)
            for name, (limits, amount) in pending.items():
                self.local.charge(name, limits, amount)

    async def _renew_leases(self) -> None:
        try:
            for name, leases in list(self._leases.items()):
                if leases:
                    await self._renew(keys=[_keys(name)[0]], args=[LEASE_TTL, *leases])
        except RedisError as error:
            self._failed(error)

    async def aclose(self) -> None:
        with anyio.move_on_after(TIMEOUT * 2, shield=True):
            try:
                await self._flush()
            except RedisError:
                pass
        await self._redis.aclose()


def _verdict(
    limits: ApiKey,
    allowed: bool,
    limit: Limit | None,
    requests: float | None,
    tokens: float | None,
    lease: str | None = None,
    wanted_tokens: int = 1,
) -> Verdict:
    """A verdict from the levels the server reported (retry times computed as the local ones)."""
    rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
    requests = requests if rpm is not None else None
    tokens = tokens if tpm is not None else None
    retry = 1.0
    if limit == "requests" and rpm is not None and requests is not None:
        retry = max(1 - requests, 0) * 60 / rpm
    elif limit == "tokens" and tpm is not None and tokens is not None:
        retry = max(min(wanted_tokens, tpm) - tokens, 0) * 60 / tpm
    return Verdict(
        allowed,
        limit,
        max(retry, 0.0) if not math.isnan(retry) else 1.0,
        requests,
        (rpm - requests) * 60 / rpm if rpm is not None and requests is not None else 0.0,
        tokens,
        (tpm - tokens) * 60 / tpm if tpm is not None and tokens is not None else 0.0,
        lease,
    )
