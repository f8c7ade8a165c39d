"""What the gRPC engines have in common: SGLang's scheduler (``sglang_grpc``) and vLLM's
entrypoint (``vllm_grpc``) take a ``GenerateRequest`` with the prompt as
``tokenized.input_ids``, a packed ``repeated uint32`` (about 3 bytes an id where JSON takes 6 to
7, and nothing for the engine to parse as text), and stream ``GenerateResponse``s whose fields
have the same names and meaning in both protos.

The core writes the ids' varints as it writes JSON for the HTTP backends: once per encoded
prompt, kept, and copied by the next turn that extends it, so a long conversation's request
costs a copy of its ids, not a conversion. The rest of the request (id, sampling, ``stream``)
is serialized by the protobuf library and the ids appended as further fields (protobuf reads
fields in any order).

The engine streams ``chunk`` messages with each choice's new ids (and their log probabilities
when asked), then one ``complete`` per choice with its finish reason; in a stream the
``complete`` repeats the last chunk's ids, which are not read twice. A request starts once the
channel is connected, and counts as accepted then: gRPC says nothing until the first output,
which can be a long prefill away. Closing the stream cancels the call, and the engine aborts
the request. Needs the ``grpc`` extra (``grpcio`` and ``smg-grpc-proto``, the package both
engines' gRPC servers take their generated code from).
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from abc import abstractmethod
from collections.abc import AsyncGenerator, Sequence
from types import ModuleType
from typing import Any, ClassVar

from deepseek_recipe._native import TokenIds
from deepseek_recipe.backends import Backend, BackendChunk, BackendError, GenerationRequest
from deepseek_recipe.backends._http import HEALTH_TIMEOUT, without_stop_ids, write_body
from deepseek_recipe.frontend import FinishReason

try:
    import grpc
    import grpc.aio
except ImportError:  # pragma: no cover (the extra is installed wherever the tests run)
    raise ImportError("the gRPC backends need the grpc extra: pip install 'deepseek-recipe-rs[grpc]'") from None

#: `GenerateRequest.tokenized` (2), then `TokenizedInput.input_ids` (2), in both protos.
IDS_FIELDS = (2, 2)
_CHANNEL_OPTIONS = [
    # A long prompt is megabytes of ids; outputs are small.
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    # One channel for every request: HTTP/2 multiplexes them.
    ("grpc.enable_retries", 0),
    # A channel that failed to connect waits out a backoff before trying again, and fails
    # every call meanwhile; gRPC's default grows it to two minutes. An engine restarted (or
    # still starting) is found within a second instead; the pool rests a failing replica.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


class GrpcBackend(Backend):
    """An engine's gRPC ``Generate`` (subclasses: the service, its messages, the request).
    ``url``: ``grpc://host:port`` (or ``host:port``), ``grpcs://host:port`` for TLS with the
    system's certificates, or ``unix:/path``."""

    #: The backend's setting (``--backend``).
    kind: ClassVar[str]
    #: The service's path (``/package.Service/``).
    service: ClassVar[str]
    #: The proto's generated messages.
    messages: ClassVar[ModuleType]
    #: The port of a URL that names none.
    default_port: ClassVar[int]

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        self._target, self._secure = grpc_target(url, self.kind, self.default_port)
        self.name = f"{self.kind} {url}"
        self.connect_timeout = connect_timeout
        self._channel: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight = 0

    @abstractmethod
    def body(self, request: GenerationRequest) -> bytes:
        """The serialized ``GenerateRequest`` for ``request``."""

    def _connection(self) -> Any:
        """The channel, made on first use in the running event loop (a gRPC channel belongs to
        the loop it was made in: the gateway builds its backend before its loop runs)."""
        loop = asyncio.get_running_loop()
        if self._channel is None or self._loop is not loop:
            if self._secure:
                credentials = grpc.ssl_channel_credentials()
                self._channel = grpc.aio.secure_channel(self._target, credentials, options=_CHANNEL_OPTIONS)
            else:
                self._channel = grpc.aio.insecure_channel(self._target, options=_CHANNEL_OPTIONS)
            self._loop = loop
            pb = self.messages
            # The request is written by `body` (bytes pass through); responses are parsed by protobuf.
            self._generate = self._channel.unary_stream(
                self.service + "Generate", response_deserializer=pb.GenerateResponse.FromString
            )
            self._health = self._channel.unary_unary(
                self.service + "HealthCheck",
                request_serializer=pb.HealthCheckRequest.SerializeToString,
                response_deserializer=pb.HealthCheckResponse.FromString,
            )
        return self._channel

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def aclose(self) -> None:
        if self._channel is not None and self._loop is asyncio.get_running_loop():
            await self._channel.close()
        self._channel = None

    async def healthy(self) -> bool:
        """The engine's ``HealthCheck`` says healthy within :data:`HEALTH_TIMEOUT`."""
        self._connection()
        try:
            answer = await self._health(self.messages.HealthCheckRequest(), timeout=HEALTH_TIMEOUT)
        except grpc.aio.AioRpcError:
            return False
        return bool(answer.healthy)

    def _with_ids(self, head: Any, request: GenerationRequest) -> bytes:
        """``head`` (a ``GenerateRequest`` without its prompt) serialized, the prompt's ids after it."""
        ids = request.prompt_ids if isinstance(request.prompt_ids, TokenIds) else TokenIds(request.prompt_ids)
        return ids.protobuf_between(head.SerializeToString(), IDS_FIELDS, b"")

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        self._in_flight += 1
        call: Any = None
        try:
            await self._connected()
            ids = request.prompt_ids
            body = await write_body(
                self.body, request, ids.unwritten_varints() if isinstance(ids, TokenIds) else len(ids)
            )
            metadata = None
            if request.observer is not None and request.observer.engine_headers:
                metadata = tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in request.observer.engine_headers)
            call = self._generate(body, metadata=metadata)
            yield BackendChunk()
            async for chunk in self._chunks(call, request):
                yield chunk
        finally:
            self._in_flight -= 1
            if call is not None and not call.done():
                call.cancel()  # the servicer's generator is cancelled, and the engine aborts the request

    async def _connected(self) -> None:
        """Wait until the channel is connected (at most ``connect_timeout`` seconds); a refused
        connection fails at once rather than being retried until then."""
        channel = self._connection()
        deadline = time.monotonic() + self.connect_timeout
        state = channel.get_state(try_to_connect=True)
        while state != grpc.ChannelConnectivity.READY:
            if state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN):
                raise BackendError("connect", "cannot reach the engine", backend=self.name)
            left = deadline - time.monotonic()
            if left <= 0:
                raise BackendError("timeout", "connecting to the engine timed out", backend=self.name)
            try:
                await asyncio.wait_for(channel.wait_for_state_change(state), left)
            except TimeoutError:
                raise BackendError("timeout", "connecting to the engine timed out", backend=self.name) from None
            state = channel.get_state(try_to_connect=True)

    async def _chunks(self, call: Any, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        stop_ids = set(request.stop_token_ids)
        top = request.sampling.top_logprobs or 0
        samples = max(request.sampling.n, 1)
        finished: set[int] = set()
        try:
            async for message in call:
                kind = message.WhichOneof("response")
                if kind == "chunk":
                    part = message.chunk
                    new = list(part.token_ids)
                    logprobs = _logprobs(part.output_logprobs, top) if request.sampling.logprobs and new else None
                    new, logprobs = without_stop_ids(new, logprobs, stop_ids)
                    yield BackendChunk(
                        token_ids=new or None,
                        logprobs=logprobs if new else None,
                        prompt_tokens=part.prompt_tokens or None,
                        cached_tokens=part.cached_tokens,
                        index=part.index,
                    )
                elif kind == "complete":
                    done = message.complete
                    yield BackendChunk(
                        finish_reason=self._finish(done.finish_reason),
                        prompt_tokens=done.prompt_tokens or None,
                        cached_tokens=done.cached_tokens,
                        index=done.index,
                    )
                    finished.add(done.index)
                    if len(finished) >= samples:
                        return
                else:
                    raise BackendError(
                        "protocol", "the engine sent an empty response", accepted=True, backend=self.name
                    )
        except grpc.aio.AioRpcError as error:
            raise _failure(error, self.name) from None
        raise BackendError("closed", "the engine ended the stream without a finish", accepted=True, backend=self.name)

    def _finish(self, reason: str) -> FinishReason:
        if reason == "length":
            return "length"
        if reason == "abort":
            raise BackendError("closed", "the engine aborted the request", accepted=True, backend=self.name)
        if reason == "error":
            raise BackendError("status", "the engine reported an error", accepted=True, backend=self.name)
        return "stop"


def grpc_target(url: str, kind: str, default_port: int) -> tuple[str, bool]:
    """gRPC's target for ``url``, and whether it takes TLS."""
    if url.startswith("unix:"):
        return url, False
    parts = urllib.parse.urlsplit(url if "://" in url else f"grpc://{url}")
    if parts.scheme not in ("grpc", "grpcs") or not parts.hostname or parts.path.strip("/"):
        raise ValueError(f"a {kind} backend URL is grpc://host:port, grpcs://host:port or unix:/path")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{parts.port or (443 if parts.scheme == 'grpcs' else default_port)}", parts.scheme == "grpcs"


def _logprobs(value: Any, top: int) -> list[tuple[float, list[tuple[int, float]]]] | None:
    """``OutputLogProbs`` as ``(logprob, [(id, logprob)])`` per token, the ``top`` most likely
    of each position's alternatives (an engine may send more, or send them unordered)."""
    sampled: Sequence[float] = value.token_logprobs
    tops: Sequence[Any] = value.top_logprobs
    out = []
    for index, logprob in enumerate(sampled):
        alternatives: list[tuple[int, float]] = []
        if top and index < len(tops):
            entry = tops[index]
            alternatives = sorted(zip(entry.token_ids, entry.values), key=lambda pair: -pair[1])[:top]
        out.append((float(logprob), [(int(i), float(lp)) for i, lp in alternatives]))
    return out or None


def _failure(error: Any, backend: str) -> BackendError:
    """A failed call after it started. Its details are the engine's words (they can quote the
    request), so only the status code is told."""
    code = error.code()
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN):
        return BackendError("closed", f"the engine broke the stream (gRPC {code.name})", accepted=True, backend=backend)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return BackendError("timeout", "the engine's call timed out", accepted=True, backend=backend)
    return BackendError("status", f"the engine answered gRPC {code.name}", accepted=True, backend=backend)
