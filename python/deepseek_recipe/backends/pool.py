"""Several replicas of one engine behind one backend: each request goes to the least loaded.

Load is the number of requests a replica is streaming now; ties go round-robin. A replica that
cannot be reached is taken out for ``cooldown`` seconds (doubling while it keeps failing, up to
a minute) and the request is tried on the next one; a request is never retried once a replica
has accepted it (output may already have reached the client).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncGenerator, Sequence

from deepseek_recipe.backends import Backend, BackendChunk, BackendError, GenerationRequest

_MAX_COOLDOWN = 60.0


class BackendPool(Backend):
    """Least-loaded routing over ``replicas``."""

    name = "pool"

    def __init__(self, replicas: Sequence[Backend], *, cooldown: float = 2.0) -> None:
        if not replicas:
            raise ValueError("a backend pool needs at least one replica")
        self.replicas = list(replicas)
        self._cooldown = cooldown
        self._down_until = [0.0] * len(self.replicas)
        self._failures = [0] * len(self.replicas)
        self._turn = itertools.count()

    @property
    def in_flight(self) -> int:
        return sum(replica.in_flight for replica in self.replicas)

    @property
    def takes_images(self) -> bool:  # type: ignore[override]
        return all(replica.takes_images for replica in self.replicas)

    def order(self) -> list[int]:
        """Replica indices to try, best first: healthy ones least loaded first, then the rest."""
        now = time.monotonic()
        start = next(self._turn)
        count = len(self.replicas)
        rotated = [(start + k) % count for k in range(count)]
        healthy = [i for i in rotated if self._down_until[i] <= now]
        resting = sorted((i for i in rotated if self._down_until[i] > now), key=lambda i: self._down_until[i])
        return sorted(healthy, key=lambda i: self.replicas[i].in_flight) + resting

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        last: BackendError | None = None
        for index in self.order():
            replica = self.replicas[index]
            stream = replica.generate(request)
            try:
                try:
                    first = await stream.__anext__()
                except BackendError as error:
                    if error.accepted or error.kind not in ("connect", "timeout"):
                        raise
                    self._mark_down(index)
                    last = error
                    continue
                except StopAsyncIteration:
                    raise BackendError("closed", f"{replica.name} closed the stream at once") from None
                self._failures[index] = 0
                yield first
                async for chunk in stream:
                    yield chunk
                return
            finally:
                await stream.aclose()
        raise last or BackendError("overloaded", "no replica is available")

    def _mark_down(self, index: int) -> None:
        self._failures[index] += 1
        pause = min(self._cooldown * 2 ** (self._failures[index] - 1), _MAX_COOLDOWN)
        self._down_until[index] = time.monotonic() + pause

    async def aclose(self) -> None:
        for replica in self.replicas:
            await replica.aclose()
