"""Several replicas of one engine behind one backend, each request routed by a policy.

The policy (:mod:`deepseek_recipe.routing`) ranks the replicas that are up: by prefix (the
replica most likely to hold the prompt's longest prefix in KV cache, within its share of the
load; the gateway's default over several URLs), least loaded (this class's default), or in
turn. A replica that cannot be reached is rested for ``cooldown`` seconds (doubling while it
keeps failing, up to a minute) and the request is tried on the next one; a replica whose
stream breaks after it accepted a request is rested too, but that request is not retried
(output may already have reached the client). Resting replicas are tried last, soonest back
first, so a request is refused only when every replica fails.

With ``metrics`` bound (the gateway does), each replica reports its requests in flight, the
requests routed to it and why, the prompt tokens routed to it, the prefix tokens the router
expected it to hold, the cache hits it reported, and its failures.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from deepseek_recipe.backends import Backend, BackendChunk, BackendError, GenerationRequest, ReplicaMetrics
from deepseek_recipe.routing import DEFAULT_BLOCK_SIZE, LeastLoaded, PromptBlocks, Router

if TYPE_CHECKING:
    from deepseek_recipe.frontend import Frontend

_MAX_COOLDOWN = 60.0


class BackendPool(Backend):
    """``replicas`` routed by ``router`` (default: least loaded).

    ``names`` identify the replicas in metrics and to the router (default: each replica's
    name); a prefix router's ``block_size`` is the engines' KV block size and ``head_token``
    the id that ends a conversation's head (the assistant-turn token). ``clock`` (seconds)
    times the rests.
    """

    name = "pool"

    def __init__(
        self,
        replicas: Sequence[Backend],
        *,
        cooldown: float = 2.0,
        router: Router | None = None,
        names: Sequence[str] | None = None,
        block_size: int = DEFAULT_BLOCK_SIZE,
        head_token: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not replicas:
            raise ValueError("a backend pool needs at least one replica")
        self.replicas = list(replicas)
        self.names = list(names) if names is not None else [replica.name for replica in self.replicas]
        if len(self.names) != len(self.replicas):
            raise ValueError("a backend pool needs one name per replica")
        self.router = router if router is not None else LeastLoaded()
        self.block_size = block_size
        self.head_token = head_token
        self._cooldown = cooldown
        self._clock = clock
        self._down_until = [0.0] * len(self.replicas)
        self._failures = [0] * len(self.replicas)
        self._metrics: ReplicaMetrics | None = None

    @property
    def in_flight(self) -> int:
        return sum(replica.in_flight for replica in self.replicas)

    @property
    def takes_images(self) -> bool:  # type: ignore[override]
        return all(replica.takes_images for replica in self.replicas)

    def bind_metrics(self, metrics: ReplicaMetrics) -> None:
        self._metrics = metrics

    def resting(self) -> list[int]:
        """Replicas resting after a failure now, soonest back first."""
        now = self._clock()
        return sorted((i for i, until in enumerate(self._down_until) if until > now), key=self._down_until.__getitem__)

    def plan(self, request: GenerationRequest) -> tuple[list[int], str, int, PromptBlocks | None]:
        """Replicas to try for ``request`` in order, why the first, the prefix tokens expected
        cached there, and the prompt's blocks (when the router reads them)."""
        resting = self.resting()
        up = [i for i in range(len(self.replicas)) if i not in resting]
        blocks = None
        if self.router.uses_prefixes:
            blocks = PromptBlocks.of(request.prompt_ids, block_size=self.block_size, head_token=self.head_token)
        if not up:
            return resting, "retry", 0, blocks
        loads = [replica.in_flight for replica in self.replicas]
        route = self.router.route(blocks, loads, up)
        return route.order + resting, route.reason, route.prefix_tokens, blocks

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        start = time.perf_counter()
        order, reason, prefix_tokens, blocks = self.plan(request)
        if request.observer is not None:
            request.observer.stage("route", start, time.perf_counter())
        last: BackendError | None = None
        for position, index in enumerate(order):
            replica, label = self.replicas[index], self.names[index]
            stream = replica.generate(request)
            running = self._metrics.replica_running.labels(label) if self._metrics is not None else None
            if running is not None:
                running.inc()
            try:
                try:
                    first = await stream.__anext__()
                except BackendError as error:
                    _name(error, index, replica)
                    if error.accepted or error.kind not in ("connect", "timeout"):
                        raise
                    self._failed(index, error)
                    last = error
                    continue
                except StopAsyncIteration:
                    raise BackendError("closed", "the engine closed the stream at once", backend=replica.name) from None
                self._failures[index] = 0
                self.router.routed(blocks, index)
                self._count(index, request, "failover" if position else reason, prefix_tokens if not position else 0)
                cached = first.cached_tokens
                yield first
                async for chunk in stream:
                    cached = chunk.cached_tokens if chunk.cached_tokens is not None else cached
                    yield chunk
                if cached and self._metrics is not None:
                    self._metrics.replica_cached_tokens.labels(label).inc(cached)
                return
            except BackendError as error:
                _name(error, index, replica)
                if error.accepted and error.kind in ("closed", "protocol"):
                    self._failed(index, error)  # it broke mid-stream: rest it
                raise
            finally:
                if running is not None:
                    running.dec()
                await stream.aclose()
        raise last or BackendError("overloaded", "no replica is available")

    def _failed(self, index: int, error: BackendError) -> None:
        self._failures[index] += 1
        pause = min(self._cooldown * 2 ** (self._failures[index] - 1), _MAX_COOLDOWN)
        self._down_until[index] = self._clock() + pause
        if self._metrics is not None:
            self._metrics.replica_failures.labels(self.names[index], error.kind).inc()

    def _count(self, index: int, request: GenerationRequest, reason: str, prefix_tokens: int) -> None:
        if self._metrics is None:
            return
        label = self.names[index]
        self._metrics.replica_requests.labels(label, reason).inc()
        self._metrics.replica_prompt_tokens.labels(label).inc(len(request.prompt_ids))
        if prefix_tokens:
            self._metrics.replica_routed_prefix_tokens.labels(label).inc(prefix_tokens)

    async def aclose(self) -> None:
        for replica in self.replicas:
            await replica.aclose()

    async def healthy(self) -> bool:
        """Whether at least one replica answers its health check (all asked at once)."""
        answers = [False] * len(self.replicas)

        async def ask(index: int) -> None:
            answers[index] = await self.replicas[index].healthy()

        async with anyio.create_task_group() as group:
            for index in range(len(self.replicas)):
                group.start_soon(ask, index)
        return any(answers)


def _name(error: BackendError, index: int, replica: Backend) -> None:
    """Say which replica failed: its index for the client, its name (URL) for the log."""
    if error.replica is None:
        error.replica, error.backend = index, error.backend or replica.name


def head_token(frontend: Frontend) -> int | None:
    """The id of ``frontend``'s assistant-turn token, which ends a conversation's head."""
    from deepseek_recipe._native import SpecialToken

    ids = frontend.tokenizer.encode(frontend.options.special_tokens.token(SpecialToken.Assistant))
    return ids[0] if len(ids) == 1 else None
