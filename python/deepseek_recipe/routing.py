"""Which engine replica gets a request: routing policies over a prompt's KV-cache blocks and
the replicas' load.

Engines with prefix caching keep a prompt's KV cache in blocks (128 tokens by default) and
reuse them for any later prompt that starts with the same tokens, so an agent conversation,
sent again with every turn, is cheap only where its earlier turns ran. :class:`PrefixRouter`
sends each request to the replica most likely to hold its longest prefix, within a bound on
load, with no state shared between gateway processes or machines:

1. **Memory.** Each process remembers, in bounded memory, which replica it sent recent
   prompts to (block hashes past the conversation's head, see below). A prompt that extends
   one of them goes to the same replica: it holds that prefix.
2. **Rendezvous.** Otherwise the replicas are ranked by a hash of the replica's name and the
   prompt's *head*: its ids up to and including the first assistant-turn token (system prompt,
   tools and first user message, which every turn of a conversation repeats unchanged), or its
   first block when it has none. Every process and machine ranks the same way, so every turn
   of a conversation lands on the same replica wherever it enters, and conversations spread
   evenly. Agents that share a system prompt and tools still spread: the first user message
   is part of the head.
3. **Bounded load.** A replica already over its share of the requests in flight (this
   process's, plus the new one, times ``load_factor``, rounded up: :func:`load_share`) is
   skipped for the next in the order ("consistent hashing with bounded loads"), so a popular
   head cannot pile onto one replica. Skipping only replicas already *over* the share, not
   those the request would take to it, leaves one request of headroom: a gateway process sees
   only its own requests, a few per replica, and a tighter bound moves conversations (and
   loses their cache) on noise; ``bench/route_sim.py`` measured both.

Hashes are the library's block hashes (:func:`deepseek_recipe.block_hashes`): exact token
ids, chained, the same in every process. :class:`LeastLoaded` and :class:`RoundRobin` ignore
prefixes. ``bench/route_sim.py`` replays a multi-agent workload through these same classes.

Policies are plain objects with no I/O and no clock: the backend pool
(:class:`deepseek_recipe.backends.pool.BackendPool`) gives them loads and which replicas are
up, and tells them where a request went. They are not thread-safe (one event loop uses each).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from deepseek_recipe._native import TokenIds, block_hashes, prefix_hash

RoutingPolicy: TypeAlias = Literal["prefix", "least_loaded", "round_robin"]
"""The routing policies by name (the gateway's ``routing`` setting)."""

RouteReason: TypeAlias = Literal["prefix", "affinity", "spilled", "least_loaded", "round_robin"]
"""Why a replica came first: it holds a remembered prefix (``prefix``), it is the head's
rendezvous choice (``affinity``), those were over their load share (``spilled``), or the
policy ignores prefixes."""

DEFAULT_BLOCK_SIZE = 128
_MASK = (1 << 64) - 1
_MEMORY_STRIDE = 8  # remember every 8th block past the head, and the last one


@dataclass(frozen=True)
class PromptBlocks:
    """What routing reads from a prompt: its block hashes and its head.

    ``hashes`` has one hash per full block; ``head_tokens`` ids form the head and ``key`` is
    their chained hash (:func:`deepseek_recipe.prefix_hash`); ``tokens`` is the prompt length.
    """

    hashes: Sequence[int]
    key: int
    head_tokens: int
    tokens: int
    block_size: int

    @classmethod
    def of(
        cls, ids: TokenIds | Sequence[int], *, block_size: int = DEFAULT_BLOCK_SIZE, head_token: int | None = None
    ) -> PromptBlocks:
        """The blocks of ``ids``; the head ends at the first ``head_token`` (the assistant-turn
        token), or with the first block when there is none."""
        head = min(len(ids), block_size)
        if head_token is not None:
            try:
                head = ids.index(head_token) + 1
            except ValueError:
                pass
        return cls(
            hashes=block_hashes(ids, block_size),
            key=prefix_hash(ids, head, block_size),
            head_tokens=head,
            tokens=len(ids),
            block_size=block_size,
        )


@dataclass(frozen=True)
class Route:
    """A routing decision: replica indices to try, best first (failover follows the order);
    why the first one; and the prompt tokens this process expects it to hold cached."""

    order: list[int]
    reason: RouteReason
    prefix_tokens: int = 0


class Router(ABC):
    """A routing policy: ranks the available replicas for one request."""

    #: Whether :meth:`route` reads ``blocks`` (the pool then computes them).
    uses_prefixes: bool = False

    @abstractmethod
    def route(self, blocks: PromptBlocks | None, loads: Sequence[int], available: Sequence[int]) -> Route:
        """Rank ``available`` (replica indices, at least one) given every replica's requests
        in flight (``loads``, indexed by replica)."""

    def routed(self, blocks: PromptBlocks | None, replica: int) -> None:  # noqa: B027 (an optional hook)
        """``replica`` accepted the request whose prompt is ``blocks``."""


class RoundRobin(Router):
    """Each request to the next available replica in turn."""

    def __init__(self) -> None:
        self._turn = itertools.count()

    def route(self, blocks: PromptBlocks | None, loads: Sequence[int], available: Sequence[int]) -> Route:
        start = next(self._turn) % len(available)
        return Route(list(available[start:]) + list(available[:start]), "round_robin")


class LeastLoaded(Router):
    """Each request to the replica with the fewest requests in flight; ties in turn."""

    def __init__(self) -> None:
        self._turn = itertools.count()

    def route(self, blocks: PromptBlocks | None, loads: Sequence[int], available: Sequence[int]) -> Route:
        start = next(self._turn) % len(available)
        rotated = list(available[start:]) + list(available[:start])
        return Route(sorted(rotated, key=lambda i: loads[i]), "least_loaded")


class PrefixRouter(Router):
    """The replica most likely to hold the prompt's longest prefix, within its load share (see
    the module doc). ``names`` identify the replicas (their URLs): processes configured with
    the same names route alike, whatever order they list them in. ``memory_blocks`` bounds
    the remembered block hashes (0: rendezvous only); ``load_factor`` (at least 1) sets a
    replica's share of the in-flight requests (:func:`load_share`).
    """

    uses_prefixes = True

    def __init__(self, names: Sequence[str], *, load_factor: float = 1.25, memory_blocks: int = 131_072) -> None:
        if not names:
            raise ValueError("a router needs at least one replica")
        if load_factor < 1:
            raise ValueError("load_factor must be at least 1")
        self._seeds = [_name_seed(name) for name in names]
        self.load_factor = load_factor
        self.memory_blocks = memory_blocks
        self._memory: OrderedDict[int, int] = OrderedDict()

    def rendezvous(self, key: int, available: Sequence[int]) -> list[int]:
        """``available`` ranked for ``key``, best first (the same in every process)."""
        return sorted(available, key=lambda i: _mix(key ^ self._seeds[i]), reverse=True)

    def remembered(self, blocks: PromptBlocks) -> tuple[int, int] | None:
        """``(replica, tokens)``: where this process sent the longest remembered prefix of
        ``blocks`` past its head, and how long that prefix is."""
        memory, hashes = self._memory, blocks.hashes
        first = blocks.head_tokens // blocks.block_size  # the first block holding ids past the head
        last = len(hashes) - 1
        if last < first:
            return None
        for position in range(last, first - 1, -1):
            if (replica := memory.get(hashes[position])) is not None:
                return replica, (position + 1) * blocks.block_size
        return None

    def route(self, blocks: PromptBlocks | None, loads: Sequence[int], available: Sequence[int]) -> Route:
        if blocks is None:
            raise ValueError("prefix routing needs the prompt's blocks")
        ranked = self.rendezvous(blocks.key, available)
        known = self.remembered(blocks) if self._memory else None
        if known is not None and known[0] in available:
            ranked.remove(known[0])
            ranked.insert(0, known[0])
        share = load_share(self.load_factor, sum(loads[i] for i in available), len(available))
        chosen = next((k for k, i in enumerate(ranked) if loads[i] <= share), 0)
        if chosen:
            ranked.insert(0, ranked.pop(chosen))
            return Route(ranked, "spilled")
        if known is not None and ranked[0] == known[0]:
            return Route(ranked, "prefix", known[1])
        return Route(ranked, "affinity")

    def routed(self, blocks: PromptBlocks | None, replica: int) -> None:
        if blocks is None or self.memory_blocks <= 0:
            return
        memory, hashes = self._memory, blocks.hashes
        first = blocks.head_tokens // blocks.block_size
        last = len(hashes) - 1
        if last < first:
            return
        positions = range(first + (_MEMORY_STRIDE - 1 - first) % _MEMORY_STRIDE, last, _MEMORY_STRIDE)
        for position in (*positions, last):
            block = hashes[position]
            memory[block] = replica
            memory.move_to_end(block)
        while len(memory) > self.memory_blocks:
            memory.popitem(last=False)


def load_share(load_factor: float, in_flight: int, replicas: int) -> int:
    """A replica's share of the requests in flight: ``load_factor`` times the mean, the new
    request included, rounded up. A replica already over it is skipped."""
    return math.ceil(load_factor * (in_flight + 1) / replicas)


def make_router(
    policy: RoutingPolicy, names: Sequence[str], *, load_factor: float = 1.25, memory_blocks: int = 131_072
) -> Router:
    """The router for ``policy`` over replicas called ``names``."""
    if policy == "prefix":
        return PrefixRouter(names, load_factor=load_factor, memory_blocks=memory_blocks)
    if policy == "least_loaded":
        return LeastLoaded()
    if policy == "round_robin":
        return RoundRobin()
    raise ValueError(f"unknown routing policy {policy!r}")


def _name_seed(name: str) -> int:
    """A replica's 64-bit seed: the same in every process (Python's ``hash`` is not)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def _mix(value: int) -> int:
    """SplitMix64's finalizer: a 64-bit value to a well-spread one."""
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK
    return value ^ (value >> 31)
