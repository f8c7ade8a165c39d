"""A small real gRPC engine for the vllm-grpc backend's tests: the ``VllmEngine`` service of
``vllm_engine.proto`` (the generated code of ``smg-grpc-proto``, as vLLM's own servicer uses
it) on loopback, in a thread with its own event loop.

It records every ``GenerateRequest``, streams a scripted output as vLLM's servicer does
(``chunk`` messages with each choice's new ids, then a ``complete`` per choice that repeats
the last chunk's ids), gives log probabilities in the servicer's shape (the sampled token
first in each top list, then the most likely others), and misbehaves on request (stall, fail
mid-stream, reject the request, abort, never finish). ``cancelled`` counts calls whose client
went away.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import grpc
import grpc.aio
from smg_grpc_proto import vllm_engine_pb2 as pb
from smg_grpc_proto import vllm_engine_pb2_grpc as pb_grpc

Behaviour = Literal["normal", "stall", "die", "reject", "abort", "endless", "no_finish"]
SECRET = "secret prompt text"
"""What a rejection's details say: the gateway must never pass it on."""


def logprob_of(token: int) -> float:
    """A made-up log probability of ``token`` (the same every time)."""
    return -((token % 7) + 1) / 8


@dataclass
class FakeGrpcEngine(pb_grpc.VllmEngineServicer):  # type: ignore[misc]
    script: list[list[int]] = field(default_factory=list)
    finish: str = "stop"
    behaviour: Behaviour = "normal"
    cached_tokens: int = 0
    interval: float = 0.0
    healthy: bool = True
    requests: list[Any] = field(default_factory=list)
    cancelled: int = 0
    active: int = 0

    async def Generate(self, request: Any, context: Any) -> AsyncIterator[Any]:
        self.requests.append(request)
        self.active += 1
        try:
            async for message in self._generate(request, context):
                yield message
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.active -= 1

    async def _generate(self, request: Any, context: Any) -> AsyncIterator[Any]:
        if self.behaviour == "reject":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad request: {SECRET}")
        if self.behaviour == "stall":
            await asyncio.Event().wait()
        prompt = len(request.tokenized.input_ids)
        params = request.sampling_params
        samples = params.n or 1
        top = params.logprobs if params.HasField("logprobs") else None
        chunks = list(self.script) or [[100]]
        index = 0
        while self.behaviour == "endless" or index < len(chunks):
            ids = chunks[index % len(chunks)]
            index += 1
            if self.interval:
                await asyncio.sleep(self.interval)
            if self.behaviour == "die" and index == 2:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "the engine died")
            last = index == len(chunks) and self.behaviour not in ("endless", "no_finish")
            for sample in range(samples):
                chunk = pb.GenerateStreamChunk(
                    token_ids=ids,
                    prompt_tokens=prompt,
                    completion_tokens=len(ids),
                    cached_tokens=self.cached_tokens,
                    index=sample,
                )
                if top is not None:
                    chunk.output_logprobs.CopyFrom(_logprobs(ids, top))
                yield pb.GenerateResponse(chunk=chunk)
                if last:
                    reason = "abort" if self.behaviour == "abort" else self.finish
                    done = pb.GenerateComplete(
                        output_ids=ids,
                        finish_reason=reason,
                        prompt_tokens=prompt,
                        completion_tokens=len(ids),
                        cached_tokens=self.cached_tokens,
                        index=sample,
                    )
                    yield pb.GenerateResponse(complete=done)

    async def HealthCheck(self, request: Any, context: Any) -> Any:
        return pb.HealthCheckResponse(healthy=self.healthy, message="ok" if self.healthy else "down")


def _logprobs(ids: list[int], top: int) -> Any:
    """vLLM's servicer's shape: each top list is the first ``top`` entries of a dict holding the
    sampled token first, then the model's most likely ids (here ``i + 1``, ``i + 2``, … with
    falling log probabilities, all more likely than the sampled one)."""
    out = pb.OutputLogProbs(token_logprobs=[logprob_of(i) for i in ids], token_ids=ids)
    for i in ids:
        entries = [(i, logprob_of(i)), *((i + k, -0.01 * k) for k in range(1, top + 1))]
        kept = entries[:top]
        out.top_logprobs.append(pb.TopLogProbs(values=[lp for _, lp in kept], token_ids=[t for t, _ in kept]))
    return out


class GrpcServer:
    """``engine`` served on a loopback port (``target``: ``grpc://127.0.0.1:port``), a free one
    unless given."""

    def __init__(self, engine: FakeGrpcEngine, port: int = 0) -> None:
        self.engine = engine
        self._asked_port = port
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.server: Any = None
        self.port = self._run(self._start())
        self.target = f"grpc://127.0.0.1:{self.port}"

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    async def _start(self) -> int:
        self.server = grpc.aio.server(options=[("grpc.max_receive_message_length", -1)])
        pb_grpc.add_VllmEngineServicer_to_server(self.engine, self.server)
        port: int = self.server.add_insecure_port(f"127.0.0.1:{self._asked_port}")
        await self.server.start()
        return port

    def stop(self) -> None:
        self._run(self.server.stop(grace=None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@contextmanager
def grpc_serving(engine: FakeGrpcEngine, port: int = 0) -> Iterator[GrpcServer]:
    server = GrpcServer(engine, port)
    try:
        yield server
    finally:
        server.stop()
