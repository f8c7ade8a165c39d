"""Inference backends: token ids and sampling settings in; output chunks, usage and a finish
reason out.

Every backend implements :class:`Backend`. ``generate`` is an async generator: its first
chunk comes as soon as the engine has accepted the request (it may carry prompt usage and no
output), later chunks carry output token ids (or text) and the last one a finish reason.
Closing the generator (``aclose``) aborts the engine's request; the gateway does that when
its client goes away. Failures raise :class:`BackendError`.

- :class:`~deepseek_recipe.backends.demo.DemoEngine`: the embedded default, no weights;
- :class:`~deepseek_recipe.backends.completions.CompletionsBackend`: an OpenAI-compatible
  ``/v1/completions`` server that takes token-id prompts (vLLM, SGLang, llama.cpp, …);
- :class:`~deepseek_recipe.backends.sglang.SGLangBackend`: SGLang's native ``/generate``;
- :class:`~deepseek_recipe.backends.pool.BackendPool`: several replicas, routed by prefix,
  load or in turn (:mod:`deepseek_recipe.routing`).
"""

from __future__ import annotations

import base64
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import orjson

from deepseek_recipe._native import ImageInfo, OutputConstraint, TokenIds
from deepseek_recipe.frontend import FinishReason, Logprobs, PreparedRequest, Sampling

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge

BackendErrorKind: TypeAlias = Literal["connect", "timeout", "status", "protocol", "closed", "overloaded"]


class BackendError(Exception):
    """The engine could not serve a request.

    ``kind``: ``connect`` (refused or unreachable), ``timeout`` (connect, first token, idle or
    total), ``status`` (the engine answered an HTTP error), ``protocol`` (it sent something
    that is not its API), ``closed`` (it ended the stream without a finish), ``overloaded``
    (no replica can take the request). ``accepted`` tells whether the engine had accepted the
    request (so output may have been produced) when it failed; a request that failed before
    that may be retried on another replica. The message never holds prompt or output text, nor
    the engine's address: ``backend`` names the engine (with its URL) for the log, and
    ``replica`` is its index in a pool, which clients may be told.
    """

    def __init__(
        self,
        kind: BackendErrorKind,
        message: str,
        *,
        accepted: bool = False,
        backend: str | None = None,
        replica: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: BackendErrorKind = kind
        self.accepted = accepted
        self.backend = backend
        self.replica = replica


class Observer(Protocol):
    """Who follows a request through the backend (the gateway's record of it): the stages a
    backend times (``route``: a pool choosing its replica) and headers for the engine's request
    (the W3C ``traceparent`` when tracing)."""

    engine_headers: list[tuple[bytes, bytes]]

    def stage(self, name: str, start: float, end: float) -> None:
        """``name`` took from ``start`` to ``end`` (``time.perf_counter`` seconds)."""


@dataclass(frozen=True)
class GenerationRequest:
    """What an engine is asked to do: continue ``prompt_ids`` under ``sampling``.

    ``stop_token_ids`` end generation (the tokenizer's end of sentence); stop *sequences* are
    deliberately absent: they apply to parsed content only, which the gateway's decoder
    matches. ``output_constraint`` is passed to engines that can constrain decoding to JSON or a
    regex; ``model`` is the name the client asked for.
    """

    request_id: str
    model: str
    prompt_ids: TokenIds | Sequence[int]
    sampling: Sampling
    stop_token_ids: Sequence[int] = ()
    output_constraint: OutputConstraint | None = None
    #: V4.1 images, preprocessed (WebP), in the order of the prompt's image placeholders.
    images: Sequence[ImageInfo] = ()
    #: Engine input tokens the images take beyond their placeholders (for an engine that
    #: reports prompt usage from ``prompt_ids`` alone).
    image_tokens: int = 0
    #: Who follows the request (stages, engine headers); ``None`` outside the gateway.
    observer: Observer | None = None

    @classmethod
    def from_prepared(
        cls, prepared: PreparedRequest, request_id: str, observer: Observer | None = None
    ) -> GenerationRequest:
        return cls(
            request_id=request_id,
            model=prepared.model,
            prompt_ids=prepared.prompt_ids,
            sampling=prepared.sampling,
            stop_token_ids=prepared.stop_token_ids,
            output_constraint=prepared.output_constraint,
            images=prepared.images.images if prepared.images is not None else (),
            image_tokens=prepared.image_tokens,
            observer=observer,
        )


def image_data_url(webp: bytes) -> str:
    """A preprocessed image as the ``data:`` URL engines take in ``image_data``."""
    return "data:image/webp;base64," + base64.b64encode(webp).decode("ascii")


def json_body(fields: dict[str, Any], ids_key: str, ids: TokenIds | Sequence[int]) -> bytes:
    """An engine's JSON request body: ``fields``, then ``ids_key`` with ``ids`` (last). A
    prompt's ids are megabytes of JSON for a long conversation: they are copied into the body
    once, from the JSON the core keeps for them."""
    if not isinstance(ids, TokenIds):
        return orjson.dumps({**fields, ids_key: list(ids)})
    head = orjson.dumps({**fields, ids_key: None})
    null = head.rindex(b"null")  # the last value written: the ids' place
    return ids.json_between(head[:null], head[null + 4 :])


@dataclass
class BackendChunk:
    """One piece of engine output.

    Output is either ``token_ids`` (with ``logprobs`` when asked for, one entry per id) or
    ``text`` produced by ``token_count`` tokens. ``prompt_tokens`` and ``cached_tokens`` are set
    where the engine reports them; ``finish_reason`` on the last chunk.
    """

    token_ids: list[int] | None = None
    text: str | None = None
    token_count: int = 0
    logprobs: Logprobs | None = None
    finish_reason: FinishReason | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    #: The choice this output belongs to (a request sampling several: ``sampling.n``).
    index: int = 0


class ReplicaMetrics(Protocol):
    """Where a backend reports per-replica metrics (the gateway's ``Metrics`` is one); each is
    labelled by the replica's name, then as its description says."""

    replica_running: Gauge
    replica_requests: Counter  # and the route: why the replica was chosen
    replica_prompt_tokens: Counter
    replica_routed_prefix_tokens: Counter
    replica_cached_tokens: Counter
    replica_failures: Counter  # and the failure's kind


class Backend(ABC):
    """One inference engine (or a pool of replicas) behind the gateway."""

    #: A short name for logs and metrics.
    name: str = "backend"
    #: Whether the engine takes images (``GenerationRequest.images``); the gateway refuses a
    #: request with images for one that does not.
    takes_images: bool = False

    @abstractmethod
    def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        """Stream the engine's output for ``request`` (an async generator; see the module doc)."""

    @property
    def in_flight(self) -> int:
        """Requests currently streaming from this backend."""
        return 0

    async def healthy(self) -> bool:
        """Whether the engine answers its own health check (the gateway's ``/ready``)."""
        return True

    def bind_metrics(self, metrics: ReplicaMetrics) -> None:  # noqa: B027 (an optional hook)
        """Report per-replica metrics into ``metrics`` (pools do; called by the gateway)."""

    async def aclose(self) -> None:  # noqa: B027 (an optional hook)
        """Release connections (called once at shutdown)."""
