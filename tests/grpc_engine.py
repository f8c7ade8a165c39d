"""A small real gRPC engine for the gRPC backends' tests: vLLM's ``VllmEngine`` service
(``vllm_engine.proto``) or SGLang's ``SglangScheduler`` (``sglang_scheduler.proto``), from the
generated code of ``smg-grpc-proto`` as both engines' servicers use it, on loopback, in a thread
with its own event loop.

It records every ``GenerateRequest``, streams a scripted output as both servicers do
(``chunk`` messages with each choice's new ids, then a ``complete`` per choice that repeats
the last chunk's ids), gives log probabilities in each servicer's shape (vLLM's: the sampled
token first in each top list, then the most likely others; SGLang's: the most likely ones), and
misbehaves on request (stall, fail mid-stream, reject the request, abort, never finish).
``cancelled`` counts calls whose client went away.
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
from smg_grpc_proto import sglang_scheduler_pb2, sglang_scheduler_pb2_grpc, vllm_engine_pb2, vllm_engine_pb2_grpc

Behaviour = Literal["normal", "stall", "die", "reject", "abort", "endless", "no_finish"]
Kind = Literal["vllm", "sglang"]
#: Each engine's messages, its servicer (every method unimplemented), and how it is added to a server.
PROTOS: dict[str, tuple[Any, Any, Any]] = {
    "vllm": (
        vllm_engine_pb2,
        vllm_engine_pb2_grpc.VllmEngineServicer,
        vllm_engine_pb2_grpc.add_VllmEngineServicer_to_server,
    ),
    "sglang": (
        sglang_scheduler_pb2,
        sglang_scheduler_pb2_grpc.SglangSchedulerServicer,
        sglang_scheduler_pb2_grpc.add_SglangSchedulerServicer_to_server,
    ),
}
SECRET = "secret prompt text"
"""What a rejection's details say: the gateway must never pass it on."""


def logprob_of(token: int) -> float:
    """A made-up log probability of ``token`` (the same every time)."""
    return -((token % 7) + 1) / 8


@dataclass
class FakeGrpcEngine:
    script: list[list[int]] = field(default_factory=list)
    finish: str = "stop"
    behaviour: Behaviour = "normal"
    cached_tokens: int = 0
    interval: float = 0.0
    healthy: bool = True
    requests: list[Any] = field(default_factory=list)
    cancelled: int = 0
    active: int = 0
    kind: Kind = "vllm"

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
        pb = PROTOS[self.kind][0]
        prompt = len(request.tokenized.input_ids)
        params = request.sampling_params
        samples = params.n or 1
        if self.kind == "vllm":
            top = params.logprobs if params.HasField("logprobs") else None
        else:
            top = request.top_logprobs_num if request.return_logprob else None
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
                    chunk.output_logprobs.CopyFrom(_logprobs(pb, ids, top, sampled_first=self.kind == "vllm"))
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
        pb = PROTOS[self.kind][0]
        return pb.HealthCheckResponse(healthy=self.healthy, message="ok" if self.healthy else "down")


def _logprobs(pb: Any, ids: list[int], top: int, *, sampled_first: bool) -> Any:
    """The model's most likely ids after ``i`` are ``i + 1``, ``i + 2``, … with falling log
    probabilities, all more likely than the sampled one. vLLM's servicer's top list is the first
    ``top`` entries of a dict holding the sampled token first, then those; SGLang's is the
    ``top`` most likely."""
    out = pb.OutputLogProbs(token_logprobs=[logprob_of(i) for i in ids], token_ids=ids)
    for i in ids:
        likely = [(i + k, -0.01 * k) for k in range(1, top + 1)]
        entries = [(i, logprob_of(i)), *likely] if sampled_first else likely
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
        self.kind = engine.kind

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    async def _start(self) -> int:
        self.server = grpc.aio.server(options=[("grpc.max_receive_message_length", -1)])
        _, servicer_class, add = PROTOS[self.engine.kind]
        servicer = servicer_class()  # the engine's two methods over the generated ones
        servicer.Generate, servicer.HealthCheck = self.engine.Generate, self.engine.HealthCheck
        add(servicer, self.server)
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
