"""The gateway's added cost over calling the engine directly, measured in one run.

    python3 bench/gateway_bench.py [--quick] [--no-record] [--project-python PATH]
                                   [--litellm-python PATH] [--only small,agent,paced,grpc,intake,pause]
                                   [--slow]

Four servers run in processes of their own on loopback: a fake token-id engine (vLLM's
``/v1/completions`` with ``return_token_ids``, and ``/v1/chat/completions`` for LiteLLM), this
project's gateway (``deepseek-recipe serve --backend completions``) in front of it, the relay
(below), and, when its virtualenv exists, LiteLLM's proxy in front of the same engine. A load generator in this
process (a minimal HTTP/1.1 client on asyncio, so its own cost stays small and equal for all)
measures:

- small requests: time to first byte (p50 / p99, one request at a time) and requests per
  second at a fixed concurrency, straight to the engine (the completions request the gateway
  would send), through the gateway, and through LiteLLM;
- a growing agent turn: a ~300k-token agent conversation that grows by one step per request,
  through the gateway and straight to the engine with the same ids; the difference is the
  gateway's added latency, set against encoding the new turn's text alone. As Chat and as
  Messages bodies, each also through a second gateway without the intake cache
  (``intake_cache_bytes`` 0: what a turn costs that reuses nothing), then two turns off the
  growing path: an early message edited, and another conversation of the same size;
- the same growing turn paced like an agent (one second between turns, another conversation)
  through two more gateways that differ only in malloc's huge pages (``huge_pages``);
- the same growing turn through a gateway that reaches the engine over vLLM's gRPC service
  (``--backend vllm-grpc``: the ids as protobuf varints) beside the JSON one, each against its
  own direct path;
- the intake cache alone, in this process: the heap only it holds per ~300k-token conversation
  against what it counts, and 10,000 conversations under the default cap;
- a turn after a pause, in processes of their own: a growing turn's preparation in a worker
  thread after 0, 0.1 and 1 s of waiting, with and without the huge pages ``serve`` asks malloc
  for, beside the new text encoded alone and one pass over the previous body after the same
  pause.

Both also go through a relay: the gateway's server (uvicorn with its protocol settings) and
engine connection with no work between them, sending the engine the request the bench made
beforehand. What the relay adds is the floor under any gateway on this stack (receiving the
body, sending the ids, passing the answer back); the gateway's added time minus the relay's is
its own work. Where ``cc`` is found, the same relay written in C (``bench/relay_floor.c``: no
interpreter, no ASGI server) runs beside it, the small requests and the Chat turns go through
it too, and its added time is the floor under a gateway whose request path is compiled code.

``--slow`` measures the small requests on a slower machine: every process of the run pinned to
one CPU while a busy loop holds the other (recorded as a section of its own).

Ratios are printed against the direct path and against LiteLLM. Unless ``--no-record``, the run
is recorded as every bench's is (``bench/record.py``): ``bench/results/gateway-<UTC stamp>.json``
and its sections in ``bench/results.md``. Nothing here is imported by the library.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import record as R  # noqa: E402

MODEL = "DeepSeek-V4-Pro"
MASTER_KEY = "sk-bench-only"  # LiteLLM refuses to start without one; sent to every server
ANSWER = "Sure.</think>Hello! How can I help you with the gateway benchmark today?"


# -- the fake engine (run as a subprocess: --serve-engine) -------------------------------------


def serve_engine(port: int, script_path: str) -> None:
    """A minimal engine: streams the scripted answer at once, as vLLM's two APIs do."""
    import orjson
    import uvicorn

    script = json.loads(Path(script_path).read_text())
    ids: list[int] = script["ids"]
    texts: list[str] = script["texts"]

    def completion_events(prompt_len: int) -> list[bytes]:
        out = []
        for k, (token, text) in enumerate(zip(ids, texts)):
            finish = "stop" if k == len(ids) - 1 else None
            choice = {"index": 0, "text": text, "token_ids": [token], "logprobs": None, "finish_reason": finish}
            out.append(
                orjson.dumps(
                    {"id": "cmpl-b", "object": "text_completion", "created": 0, "model": MODEL, "choices": [choice]}
                )
            )
        usage = {"prompt_tokens": prompt_len, "completion_tokens": len(ids), "total_tokens": prompt_len + len(ids)}
        out.append(orjson.dumps({"id": "cmpl-b", "object": "text_completion", "choices": [], "usage": usage}))
        return out

    def chat_events() -> list[bytes]:
        out = []
        for k, text in enumerate(texts):
            delta = {"role": "assistant", "content": text} if k == 0 else {"content": text}
            finish = "stop" if k == len(texts) - 1 else None
            chunk = {
                "id": "chatcmpl-b",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            out.append(orjson.dumps(chunk))
        return out

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = orjson.loads(body)
        events = (
            chat_events()
            if scope["path"].endswith("/chat/completions")
            else completion_events(len(request.get("prompt", [])))
        )
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for event in events:
            await send({"type": "http.response.body", "body": b"data: " + event + b"\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False, timeout_keep_alive=75)


def serve_grpc_engine(port: int, script_path: str) -> None:
    """The same engine behind vLLM's gRPC service (``vllm_engine.proto``): the scripted answer
    as one ``chunk`` per token, then a ``complete``, as vLLM's servicer streams them."""
    import grpc.aio
    from smg_grpc_proto import vllm_engine_pb2 as pb
    from smg_grpc_proto import vllm_engine_pb2_grpc as pb_grpc

    ids: list[int] = json.loads(Path(script_path).read_text())["ids"]

    class Engine(pb_grpc.VllmEngineServicer):  # type: ignore[misc]
        async def Generate(self, request: Any, context: Any) -> Any:
            prompt = len(request.tokenized.input_ids)
            for k, token in enumerate(ids):
                chunk = pb.GenerateStreamChunk(token_ids=[token], prompt_tokens=prompt, completion_tokens=1)
                yield pb.GenerateResponse(chunk=chunk)
                if k == len(ids) - 1:
                    done = pb.GenerateComplete(output_ids=[token], finish_reason="stop", prompt_tokens=prompt)
                    yield pb.GenerateResponse(complete=done)

        async def HealthCheck(self, request: Any, context: Any) -> Any:
            return pb.HealthCheckResponse(healthy=True)

    async def main() -> None:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", -1)])
        pb_grpc.add_VllmEngineServicer_to_server(Engine(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    asyncio.run(main())


async def grpc_latencies(port: int, bodies: list[bytes], gap: float = 0.0) -> list[float]:
    """Each serialized ``GenerateRequest``'s whole time straight to the gRPC engine on one
    channel, in turn, ``gap`` seconds apart (the channel connected first, untimed)."""
    import grpc.aio
    from smg_grpc_proto import vllm_engine_pb2 as pb

    async with grpc.aio.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)]
    ) as channel:
        await channel.channel_ready()
        generate = channel.unary_stream(
            "/vllm.grpc.engine.VllmEngine/Generate", response_deserializer=pb.GenerateResponse.FromString
        )
        totals = []
        for body in bodies:
            if gap and totals:
                await asyncio.sleep(gap)
            start = time.perf_counter()
            async for _ in generate(body):
                pass
            totals.append(time.perf_counter() - start)
        return totals


# -- the relay: the floor of any Python gateway on this server stack (--serve-relay) ----------


def serve_relay(port: int, engine_port: int, bodies: str) -> None:
    """What a gateway in Python on the same server (uvicorn, as ``deepseek-recipe serve`` runs
    it) and the same engine connection (``EngineClient``) cannot avoid, and nothing else: read
    the whole request, send the engine the request the bench made for it beforehand (named by
    the ``x-bench-body`` header, loaded into memory by a ``POST /load`` first), and pass the
    engine's bytes back unchanged. Its added time is the transfer floor under the gateway's."""
    import uvicorn

    from deepseek_recipe.backends._client import EngineClient
    from deepseek_recipe.gateway.server import uvicorn_options
    from deepseek_recipe.gateway.settings import GatewaySettings

    engine = EngineClient(f"http://127.0.0.1:{engine_port}", connect_timeout=10)
    loaded: dict[bytes, bytes] = {}
    json_head = [(b"content-type", b"application/json")]

    async def app(scope: Any, receive: Any, send: Any) -> None:  # HTTP only (lifespan off)
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        name = dict(scope["headers"]).get(b"x-bench-body", b"")
        if scope["path"] == "/load":
            loaded[name] = (Path(bodies) / name.decode()).read_bytes()
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        del body  # read in full, as a gateway must; what it would send was made beforehand
        response = await engine.request("POST", "/v1/completions", json_head, loaded[name])
        try:
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": response.status, "headers": headers})
            async for data in response.chunks():
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            response.close()

    options = uvicorn_options(GatewaySettings(port=port))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", lifespan="off", **options)


# -- a minimal HTTP/1.1 client -----------------------------------------------------------------


@dataclass
class Timing:
    ttfb: float  # seconds from sending the request to the first body byte in
    total: float  # ... to the last body byte in
    status: int


class Connection:
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=64 * 1024 * 1024)
        return cls(reader, writer, f"127.0.0.1:{port}")

    async def post(self, path: str, body: bytes, extra: str = "") -> Timing:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n{extra}"
            f"Authorization: Bearer {MASTER_KEY}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        start = time.perf_counter()
        self.writer.write(head + body)
        await self.writer.drain()
        status_line, *header_lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines if line)}
        ttfb = None
        if headers.get("transfer-encoding") == "chunked":
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                await self.reader.readexactly(size + 2)
                if ttfb is None and size:
                    ttfb = time.perf_counter() - start
                if size == 0:
                    break
        else:
            await self.reader.readexactly(int(headers.get("content-length", "0")))
        total = time.perf_counter() - start
        return Timing(ttfb if ttfb is not None else total, total, status)

    def close(self) -> None:
        self.writer.close()


async def latencies(
    port: int, path: str, bodies: list[bytes], relay: str | None = None, gap: float = 0.0
) -> list[Timing]:
    """Each body's timing, in turn on one connection, ``gap`` seconds apart; ``relay``: the
    relay's name for the engine request to send (loaded first, untimed)."""
    connection = await Connection.open(port)
    extra = "" if relay is None else f"x-bench-body: {relay}\r\n"
    timings = []
    try:
        if relay is not None:
            assert (await connection.post("/load", b"", extra)).status == 204
        for body in bodies:
            if gap and timings:
                await asyncio.sleep(gap)
            timings.append(await connection.post(path, body, extra))
        return timings
    finally:
        connection.close()


#: How many times a repeatable path (direct, relay) is timed for one turn, and how far apart:
#: back to back, a request would wait for the engine to free the last one's 300k ids (several
#: ms, after its answer went out), which a single request never does.
REPEATS = 5
REPEAT_GAP = 0.1


def median_total(timings: list[Timing]) -> float:
    """The median whole time of ``timings``, in seconds."""
    return statistics.median(t.total for t in timings)


def relay_body(name: str, engine_body: bytes) -> str:
    """Write ``engine_body`` where the relay finds it as ``name`` (which is returned)."""
    (Path(RELAY_BODIES[0]) / name).write_bytes(engine_body)
    return name


#: The relay's directory of engine requests (set by ``relay_command``).
RELAY_BODIES: list[str] = []


def relay_command(tmp: str, port: int, engine_port: int) -> list[str]:
    """The command that serves the relay on ``port`` in front of the engine on ``engine_port``,
    its engine requests kept in a directory under ``tmp`` (where ``relay_body`` writes them)."""
    RELAY_BODIES.append(str(Path(tmp) / "relay"))
    Path(RELAY_BODIES[0]).mkdir()
    return [sys.executable, __file__, "--serve-relay", str(port), str(engine_port), "--script", RELAY_BODIES[0]]


def c_relay_command(tmp: str, port: int, engine_port: int) -> list[str] | None:
    """The command that serves ``bench/relay_floor.c`` (built with ``cc`` under ``tmp``) on
    ``port``, reading the same engine requests as the relay (call after ``relay_command``);
    ``None`` without a C compiler."""
    compiler = shutil.which("cc")
    if compiler is None:
        return None
    binary = Path(tmp) / "relay_floor"
    source = Path(__file__).parent / "relay_floor.c"
    subprocess.run([compiler, "-O2", "-pthread", "-o", str(binary), str(source)], check=True)
    return [str(binary), str(port), str(engine_port), RELAY_BODIES[0]]


async def throughput(
    port: int, path: str, body: bytes, concurrency: int, seconds: float, relay: str | None = None
) -> tuple[float, int]:
    """Requests per second with ``concurrency`` clients for ``seconds``; and failures."""
    connections = [await Connection.open(port) for _ in range(concurrency)]
    extra = "" if relay is None else f"x-bench-body: {relay}\r\n"
    done = failed = 0
    stop = time.perf_counter() + seconds

    async def client(connection: Connection) -> None:
        nonlocal done, failed
        while time.perf_counter() < stop:
            timing = await connection.post(path, body, extra)
            done += 1
            failed += timing.status != 200

    start = time.perf_counter()
    await asyncio.gather(*(client(c) for c in connections))
    elapsed = time.perf_counter() - start
    for connection in connections:
        connection.close()
    return done / elapsed, failed


# -- servers -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def wait_ready(port: int, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not start")


@contextmanager
def process(args: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    # Output is dropped: a pipe nobody reads would fill up and stop the server mid-run.
    proc = subprocess.Popen(
        args, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_ready(port, proc)
        SERVERS[port] = proc.pid
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


#: The process serving each port (for its CPU time).
SERVERS: dict[int, int] = {}


def cpu_seconds(port: int) -> float:
    """The CPU time (user and system) the threads of the process serving ``port`` have used, in
    seconds: the scheduler's nanoseconds on CPU (``/proc/<pid>/task/*/schedstat``), where
    ``/proc/<pid>/stat``'s clock ticks (10 ms) made 8 turns' CPU a multiple of 1.25 ms. A thread
    that ended between two readings is not counted (the gateway's threads live as long as it)."""
    total = 0
    for task in Path(f"/proc/{SERVERS[port]}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended while being read
    return total / 1e9


# -- the run -----------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Report:
    """The run's record (bench/record.py); `add` prints a line and files it under the current
    section ("header" until a phase starts its own)."""

    record: dict[str, Any]
    section: str = "header"

    def add(self, line: str = "") -> None:
        print(line, flush=True)
        lines = self.record["header"] if self.section == "header" else self.record["sections"][self.section]
        lines.append(line)

    def start(self, section: str) -> None:
        print(flush=True)
        self.section = section
        self.record["sections"][section] = []

    @property
    def figures(self) -> dict[str, Any]:
        figures: dict[str, Any] = self.record["figures"]
        return figures


def small_phase(report: Report, args: argparse.Namespace, frontend: Any, ports: dict[str, int]) -> None:
    from deepseek_recipe.backends import GenerationRequest
    from deepseek_recipe.backends.completions import CompletionsBackend

    chat = {
        "model": MODEL,
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Hello! What can this gateway do for me? Answer briefly."},
        ],
    }
    chat_body = json.dumps(chat).encode()
    prepared = frontend.prepare("chat", chat_body)
    direct_body = CompletionsBackend("http://unused").body(GenerationRequest.from_prepared(prepared, "bench"))
    targets: dict[str, tuple[int, str, bytes, str | None]] = {
        "direct": (ports["engine"], "/v1/completions", direct_body, None),
        "relay": (ports["relay"], "/v1/chat/completions", chat_body, relay_body("small", direct_body)),
        "gateway": (ports["gateway"], "/v1/chat/completions", chat_body, None),
    }
    if "relay_c" in ports:
        targets["relay_c"] = (ports["relay_c"], "/v1/chat/completions", chat_body, "small")
    if "litellm" in ports:
        targets["litellm"] = (ports["litellm"], "/v1/chat/completions", chat_body, None)
    n = 100 if args.quick else 400
    seconds = 3.0 if args.quick else 10.0
    rows = {}
    for name, (port, path, body, relay) in targets.items():
        asyncio.run(latencies(port, path, [body] * 20, relay))  # warm-up
        cpu = cpu_seconds(port)
        timings = asyncio.run(latencies(port, path, [body] * n, relay))
        cpu = cpu_seconds(port) - cpu
        assert all(t.status == 200 for t in timings), f"{name}: failed requests"
        ttfb = [t.ttfb * 1e3 for t in timings]
        rps, failed = asyncio.run(throughput(port, path, body, args.concurrency, seconds, relay))
        rows[name] = {
            "ttfb_p50_ms": statistics.median(ttfb),
            "ttfb_p99_ms": percentile(ttfb, 0.99),
            "total_p50_ms": statistics.median(t.total * 1e3 for t in timings),
            "rps": rps,
            "failed": failed,
            # (the C relay's threads end with their connections, before their CPU is read)
            "cpu_ms": cpu / n * 1e3 if name != "relay_c" else None,
        }
    section = "small_slow" if args.slow else "small"
    report.figures[section] = rows
    report.start(section)
    report.add(
        f"#### Small requests{' on one loaded core' if args.slow else ''} (streamed Chat, "
        f"{len(prepared.prompt_ids)} prompt tokens, {len(ANSWER)} chars out; {n} sequential, then "
        f"{args.concurrency} concurrent for {seconds:.0f} s)"
    )
    if args.slow:
        report.add()
        report.add(
            "Every process of the run (client, engine, relay, gateway, LiteLLM) pinned to CPU 1, a busy "
            "loop on CPU 0: a slower machine, as the issue asks (`--slow`)."
        )
    report.add()
    report.add(
        "| path | TTFB p50 ms | TTFB p99 ms | whole p50 ms | req/s | added p50 ms | req/s ÷ LiteLLM "
        "| server CPU ms per request |"
    )
    report.add("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        added = row["ttfb_p50_ms"] - rows["direct"]["ttfb_p50_ms"]
        vs = f"{row['rps'] / rows['litellm']['rps']:.2f}x" if "litellm" in rows else "n/a"
        cpu = "n/a" if row["cpu_ms"] is None else f"{row['cpu_ms']:.3f}"
        report.add(
            f"| {name} | {row['ttfb_p50_ms']:.3f} | {row['ttfb_p99_ms']:.3f} | {row['total_p50_ms']:.3f} | "
            f"{row['rps']:.0f} | {added:+.3f} | {vs} | {cpu} |"
        )
    report.add()
    report.add(
        "Server CPU: the engine's for the direct path, else the front's own process (the engine's "
        "excluded), over the sequential requests."
    )
    report.add()
    added = rows["gateway"]["ttfb_p50_ms"] - rows["direct"]["ttfb_p50_ms"]
    floor = rows["relay"]["ttfb_p50_ms"] - rows["direct"]["ttfb_p50_ms"]
    if args.slow:  # the targets are the unpinned run's; this one is reported beside it
        report.add(f"Added TTFB p50 {added:.3f} ms; the relay adds {floor:.3f} ms of it.")
        return
    verdict = "met" if added <= 0.5 else "MISSED"
    c_floor = ""
    if "relay_c" in rows:
        c_added = rows["relay_c"]["ttfb_p50_ms"] - rows["direct"]["ttfb_p50_ms"]
        c_floor = f" (the relay in C, `bench/relay_floor.c`, {c_added:.3f} ms)"
    report.add(
        f"Target, added TTFB p50 at most 0.5 ms: {added:.3f} ms ({verdict}); the relay (the server and "
        f"engine connection alone, no work) adds {floor:.3f} ms of it{c_floor}."
    )
    report.record["targets"]["ttfb"] = {"measured": f"{added:.3f} ms", "met": added <= 0.5}
    if "litellm" in rows:
        ratio = rows["gateway"]["rps"] / rows["litellm"]["rps"]
        theirs = rows["litellm"]["ttfb_p50_ms"] - rows["direct"]["ttfb_p50_ms"]
        ten_below_litellm(report, "vs_litellm", "added TTFB", added, theirs, f"; {ratio:.2f}x its req/s")


PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages"}


def edit_first_text(message: dict[str, Any], note: str) -> None:
    """Append ``note`` to the first text of ``message`` (its content, a block's text, a tool
    result, or its reasoning)."""
    for key in ("content", "text", "reasoning_content", "thinking"):
        value = message.get(key)
        if isinstance(value, str):
            message[key] = value + note
            return
    for value in message.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    edit_first_text(item, note)
                    return
    raise ValueError("no text to edit")


def agent_phase(
    report: Report, args: argparse.Namespace, frontend: Any, ports: dict[str, int], protocol: str = "chat"
) -> None:
    import copy

    import workloads
    from deepseek_recipe.backends import GenerationRequest
    from deepseek_recipe.backends.completions import CompletionsBackend

    target = 60_000 if args.quick else 300_000
    rounds = 4 if args.quick else 8
    conv = workloads.make_conversation(20261201, target)
    steps = len(conv.steps)
    to_body = workloads.TO_PROTOCOL[protocol]
    path = PATHS[protocol]
    backend = CompletionsBackend("http://unused")
    encoding = frontend.encoding(frontend.options.model_versions_by_name[MODEL])

    def direct_of(raw: bytes) -> tuple[Any, bytes]:
        prepared = frontend.prepare(protocol, raw)  # the direct path's ids, made here (not timed)
        return prepared, backend.body(GenerationRequest.from_prepared(prepared, "bench"))

    def median_direct(direct_body: bytes) -> float:
        # The gateway's turn happens once (a repeat would find it cached); the paths it is set
        # against are taken as the median of a few, which keeps their noise out of the difference.
        repeated = [direct_body] * REPEATS
        return median_total(asyncio.run(latencies(ports["engine"], "/v1/completions", repeated, gap=REPEAT_GAP)))

    rows = []
    previous_prompt = ""
    for k in range(rounds + 1):
        raw = json.dumps(to_body(workloads.truncated(conv, steps - rounds + k), {"stream": True}), ensure_ascii=False)
        raw_bytes = raw.encode()
        prepared, direct_body = direct_of(raw_bytes)
        prompt = encoding.render_conversation(prepared.request.conversation).prompt
        common = len(os.path.commonprefix([previous_prompt, prompt]))  # noqa: RUF071 (characters are what is meant)
        previous_prompt = prompt
        # The two gateways in turn, which one goes first alternating, each after a pause: neither
        # then meets another process's after-work from the last request (LiteLLM's).
        timed, cpu = {}, 0.0
        for which in ["gateway", "gateway_cold"][:: 1 if k % 2 == 0 else -1]:
            time.sleep(REPEAT_GAP)
            before = cpu_seconds(ports["gateway"])
            timed[which] = asyncio.run(latencies(ports[which], path, [raw_bytes]))[0]
            if which == "gateway":
                cpu = cpu_seconds(ports["gateway"]) - before
        via, cold = timed["gateway"], timed["gateway_cold"]
        direct = median_direct(direct_body)
        relayed = c_relayed = direct
        if protocol == "chat":
            name = relay_body(f"agent-{k}", direct_body)
            relayed = median_total(
                asyncio.run(latencies(ports["relay"], path, [raw_bytes] * REPEATS, name, REPEAT_GAP))
            )
            if "relay_c" in ports:
                c_relayed = median_total(
                    asyncio.run(latencies(ports["relay_c"], path, [raw_bytes] * REPEATS, name, REPEAT_GAP))
                )
        litellm_added = None
        if "litellm" in ports and protocol == "chat":
            # LiteLLM forwards the Chat body to the engine's Chat route: its added time is over
            # the engine's answer to that same body.
            theirs = asyncio.run(latencies(ports["litellm"], path, [raw_bytes]))[0]
            engine_chat = asyncio.run(latencies(ports["engine"], path, [raw_bytes]))[0]
            litellm_added = (theirs.total - engine_chat.total) * 1e3
        # The new turn's text alone, encoded fresh (it was never seen by this process's caches),
        # right after text seen before (the turn's last 4,000 characters before it) is encoded:
        # the tokenizer's tables are then in the caches, as back to back, whatever this process
        # waited for since (its cost after a pause is the "pause" phase's).
        fresh = prompt[common:] + f" {k}"
        frontend.tokenizer.encode_ordinary(prompt[max(0, common - 4000) : common])
        start = time.perf_counter()
        frontend.tokenizer.encode_ordinary(fresh)
        new_turn = time.perf_counter() - start
        if k == 0:
            continue  # the first request encodes the whole conversation (nothing cached yet)
        rows.append(
            {
                "prompt_tokens": len(prepared.prompt_ids),
                "body_bytes": len(raw_bytes),
                "new_chars": len(prompt) - common,
                "gateway_ms": via.total * 1e3,
                "direct_ms": direct * 1e3,
                "added_ms": (via.total - direct) * 1e3,
                "cold_added_ms": (cold.total - direct) * 1e3,
                "relay_added_ms": (relayed - direct) * 1e3 if protocol == "chat" else None,
                "c_relay_added_ms": (c_relayed - direct) * 1e3 if protocol == "chat" and "relay_c" in ports else None,
                "new_turn_encode_ms": new_turn * 1e3,
                "gateway_cpu_ms": cpu * 1e3,
                "litellm_added_ms": litellm_added,
            }
        )
    # Turns off the growing path: an early message edited (the messages before it are reused),
    # and another conversation (nothing to reuse: a cold parse, then kept).
    last = to_body(workloads.truncated(conv, steps), {"stream": True})
    extra = {}
    for name, index in (("early_edit", 2), ("new_conversation", 0)):
        added, cold_added = [], []
        for n in range(REPEATS):  # each a body neither gateway has seen
            body = copy.deepcopy(last)
            edit_first_text(body["messages"][index], f" ({name} {n})")
            raw_bytes = json.dumps(body, ensure_ascii=False).encode()
            direct = median_direct(direct_of(raw_bytes)[1])
            # The two gateways in turn, which one goes first alternating.
            order = ["gateway", "gateway_cold"][:: 1 if n % 2 == 0 else -1]
            timed = {which: asyncio.run(latencies(ports[which], path, [raw_bytes]))[0] for which in order}
            via, cold = timed["gateway"], timed["gateway_cold"]
            added.append((via.total - direct) * 1e3)
            cold_added.append((cold.total - direct) * 1e3)
        extra[name] = {"added_ms": statistics.median(added), "cold_added_ms": statistics.median(cold_added)}
    section = "agent" if protocol == "chat" else f"agent_{protocol}"
    report.figures[section] = {"turns": rows, "off_path": extra} if protocol != "chat" else rows
    if protocol == "chat":
        report.figures["agent_off_path"] = extra
    report.start(section)
    title = "Chat" if protocol == "chat" else "Messages"
    report.add(
        f"#### Growing agent turn ({title}, ~{target // 1000}k tokens, one step more each request, {rounds} rounds)"
    )
    report.add()
    report.add(
        "| prompt tokens | body MB | new chars | gateway ms | direct ms | added ms | added, no intake cache ms "
        "| relay added ms | C relay added ms | encode new turn alone ms | added ÷ new turn | LiteLLM added ms |"
    )
    report.add("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        ratio = row["added_ms"] / row["new_turn_encode_ms"]
        theirs = "n/a" if row["litellm_added_ms"] is None else f"{row['litellm_added_ms']:.1f}"
        relay = "n/a" if row["relay_added_ms"] is None else f"{row['relay_added_ms']:.1f}"
        c_relay = "n/a" if row.get("c_relay_added_ms") is None else f"{row['c_relay_added_ms']:.1f}"
        report.add(
            f"| {row['prompt_tokens']:,} | {row['body_bytes'] / 1e6:.2f} | {row['new_chars']:,} "
            f"| {row['gateway_ms']:.1f} | {row['direct_ms']:.1f} | {row['added_ms']:.1f} | {row['cold_added_ms']:.1f} "
            f"| {relay} | {c_relay} | {row['new_turn_encode_ms']:.2f} | {ratio:.1f}x | {theirs} |"
        )
    added = statistics.median(r["added_ms"] for r in rows)
    cold_added = statistics.median(r["cold_added_ms"] for r in rows)
    alone = statistics.median(r["new_turn_encode_ms"] for r in rows)
    cpu = statistics.mean(r["gateway_cpu_ms"] for r in rows)
    report.add()
    report.add(
        f"Off the growing path (medians of {REPEATS}, each body new to both gateways): an early message edited adds "
        f"{extra['early_edit']['added_ms']:.1f} ms ({extra['early_edit']['cold_added_ms']:.1f} ms with no intake "
        f"cache); another conversation of the same size adds {extra['new_conversation']['added_ms']:.1f} ms "
        f"({extra['new_conversation']['cold_added_ms']:.1f} ms with no intake cache)."
    )
    report.add(
        f"The gateway's CPU per turn (user and system, all its threads; mean of {rounds}): {cpu:.1f} ms. "
        f"Added, medians: {added:.1f} ms with the intake cache, {cold_added:.1f} ms without (a second "
        "gateway started with `intake_cache_bytes` 0)."
    )
    verdict = "met" if added <= 3 * alone else "MISSED"
    report.add(
        f"Target, added latency at most 3x encoding the new turn alone: medians {added:.1f} ms vs "
        f"{alone:.2f} ms = {added / alone:.1f}x ({verdict})."
    )
    if protocol != "chat":
        return
    floor = statistics.median(r["relay_added_ms"] for r in rows)
    report.add(
        f"The relay (the same server and engine connection passing the request through, no work) adds "
        f"{floor:.1f} ms (median): the gateway's own work is {added - floor:.1f} ms, "
        f"{(added - floor) / alone:.1f}x encoding the new turn alone."
    )
    c_relays = [r.get("c_relay_added_ms") for r in rows]
    if None not in c_relays:
        spread = [float(v) for v in c_relays if v is not None]
        report.add(
            f"The relay in C (`bench/relay_floor.c`: the same transfers with no interpreter and no ASGI server) "
            f"adds {statistics.median(spread):.1f} ms (median; {min(spread):.1f} to {max(spread):.1f} over the "
            "turns, the direct path's own spread): the floor under a gateway whose request path is compiled code."
        )
    report.record["targets"]["turn_cost"] = {
        "measured": f"added {added:.1f} ms vs {alone:.2f} ms encoding the new text alone: {added / alone:.1f}x "
        f"(medians of {rounds} turns)",
        "met": added <= 3 * alone,
    }
    if all(r["litellm_added_ms"] is not None for r in rows):
        theirs = statistics.median(r["litellm_added_ms"] for r in rows)
        ten_below_litellm(report, "turn_vs_litellm", "added", added, theirs)


def intake_phase(report: Report, args: argparse.Namespace, frontend: Any) -> None:
    """The intake cache alone, in this process: memory per kept conversation, and the cap with
    10,000 conversations."""
    import gc

    import workloads
    from deepseek_recipe.gateway.intake import Intake
    from deepseek_recipe.gateway.settings import GatewaySettings

    def heap() -> int:
        """Bytes malloc has handed out and not had back (glibc's mallinfo2: every arena, and
        the blocks it maps alone): the Rust side's allocations and large Python objects, which
        the process's RSS would hide behind memory freed and reused."""
        import ctypes

        class Info(ctypes.Structure):
            _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd")] + [
                (name, ctypes.c_size_t) for name in ("usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
            ]

        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = Info
        info = libc.mallinfo2()
        return int(info.uordblks + info.hblkhd)

    big = 60_000 if args.quick else 300_000
    kept = 3 if args.quick else 6
    convs = [workloads.make_conversation(20261300 + seed, big) for seed in range(kept)]
    # What the kept conversations hold that nothing else does: the heap before and after the
    # cache is dropped (their prompts' ids are shared with the tokenizer's own caches).
    gate = Intake(GatewaySettings(store="none", intake_cache_bytes=4 << 30), frontend)
    sizes = []
    for conv in convs[:kept]:
        body = json.dumps(workloads.to_chat(conv, {"stream": True}), ensure_ascii=False).encode()
        sizes.append(len(body))
        for _ in range(2):  # a conversation's parse is kept from its second body on
            gate.encode("chat", body, owner="bench")
        del body
    assert gate.bodies is not None and len(gate.bodies) == kept
    counted = gate.bodies.bytes / kept
    gc.collect()
    held = heap()
    gate.bodies = None
    gc.collect()
    grown = (held - heap()) / kept
    mean_body = statistics.mean(sizes)
    big_rows = {"conversations": kept, "body_bytes": mean_body, "heap_per_conversation": grown, "counted": counted}
    # 10,000 conversations of ~30 kB each, two turns each, under the default cap.
    many = 1_000 if args.quick else 10_000
    gate = Intake(GatewaySettings(store="none"), frontend)
    cache = gate.bodies
    assert cache is not None
    system = "You are the agent. " * 1200  # ~23 kB: over the 16 KiB below which nothing is kept
    times: list[float] = []
    before = heap()
    for i in range(many):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": f"task {i}: go"}]
        for turn in range(2):
            body = json.dumps({"model": MODEL, "messages": messages}).encode()
            start = time.perf_counter()
            gate.encode("chat", body, owner="bench")
            times.append(time.perf_counter() - start)
            messages = [*messages, {"role": "assistant", "content": f"step {turn}"}, {"role": "user", "content": "on"}]
    grown_many = heap() - before
    tenth = len(times) // 10
    first, last = statistics.median(times[:tenth]) * 1e3, statistics.median(times[-tenth:]) * 1e3
    many_rows = {
        "conversations": many,
        "kept": len(cache),
        "cache_bytes": cache.bytes,
        "cap": cache.max_bytes,
        "heap_growth": grown_many,
        "first_tenth_ms": first,
        "last_tenth_ms": last,
    }
    report.figures["intake"] = {"big": big_rows, "many": many_rows}
    report.start("intake")
    report.add("#### The intake cache alone (in process)")
    report.add()
    report.add(
        f"- {kept} conversations of ~{big // 1000}k tokens ({mean_body / 1e6:.2f} MB bodies) kept: dropping the "
        f"cache gave back {grown / 1e6:.1f} MB of heap per conversation (what only it holds: body, messages, "
        f"conversation, prompt text); the cache counts {counted / 1e6:.1f} MB each against "
        "`intake_cache_bytes`."
    )
    report.add(
        f"- {many:,} conversations (~{len(system) // 1000} kB bodies, two turns each) under the default cap of "
        f"{cache.max_bytes / 2**20:.0f} MiB: {len(cache):,} kept, counted {cache.bytes / 2**20:.1f} MiB; the "
        f"heap grew {grown_many / 2**20:.1f} MiB; a turn's intake took {first:.2f} ms (median, first tenth) "
        f"and {last:.2f} ms (last tenth)."
    )


PACE = 1.0
"""Seconds between an agent's turns in the paced phase (a model's answer takes longer)."""


def paced_phase(report: Report, args: argparse.Namespace, frontend: Any, ports: dict[str, int]) -> None:
    """Growing Chat turns of another ~300k-token conversation, one every ``PACE`` seconds as an
    agent sends them, through two gateways that differ only in malloc's huge pages (``serve``'s
    default, and ``huge_pages`` false), taking turns going first."""
    import workloads
    from deepseek_recipe.backends import GenerationRequest
    from deepseek_recipe.backends.completions import CompletionsBackend

    target = 60_000 if args.quick else 300_000
    rounds = 4 if args.quick else 12
    conv = workloads.make_conversation(20261202, target)  # new to both gateways
    steps = len(conv.steps)
    backend = CompletionsBackend("http://unused")
    which_gateways = {"huge pages": "gateway_paced", "4 KiB pages": "gateway_small_pages"}
    added: dict[str, list[float]] = {name: [] for name in which_gateways}
    cpu: dict[str, float] = dict.fromkeys(which_gateways, 0.0)
    warm = 3  # a conversation's first bodies are kept, not resumed
    for k in range(rounds + warm):
        raw = json.dumps(to_chat_body(workloads, conv, steps - rounds - warm + k), ensure_ascii=False).encode()
        prepared = frontend.prepare("chat", raw)
        direct_body = backend.body(GenerationRequest.from_prepared(prepared, "bench"))
        for name in list(which_gateways)[:: 1 if k % 2 else -1]:
            port = ports[which_gateways[name]]
            time.sleep(PACE)
            before = cpu_seconds(port)
            timing = asyncio.run(latencies(port, PATHS["chat"], [raw]))[0]
            if k >= warm:
                cpu[name] += cpu_seconds(port) - before
                direct = median_total(
                    asyncio.run(latencies(ports["engine"], "/v1/completions", [direct_body] * REPEATS, gap=REPEAT_GAP))
                )
                added[name].append((timing.total - direct) * 1e3)
    rows = {
        name: {"added_ms": statistics.median(values), "cpu_ms": cpu[name] / rounds * 1e3, "turns": values}
        for name, values in added.items()
    }
    report.figures["paced"] = rows
    report.start("paced")
    report.add(f"#### Growing agent turn paced like an agent (Chat, ~{target // 1000}k tokens, {PACE:g} s apart)")
    report.add()
    report.add(
        f"{rounds} turns of another conversation, each sent {PACE:g} s after the last request, through two "
        "gateways that differ only in malloc's pages (`huge_pages`), taking turns going first; added over the "
        "engine's median for the same ids."
    )
    report.add()
    report.add("| gateway | added p50 ms | added min ms | added max ms | gateway CPU per turn ms |")
    report.add("|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        turns = row["turns"]
        report.add(f"| {name} | {row['added_ms']:.1f} | {min(turns):.1f} | {max(turns):.1f} | {row['cpu_ms']:.1f} |")


def grpc_phase(report: Report, args: argparse.Namespace, frontend: Any, ports: dict[str, int]) -> None:
    """The growing Chat turn of another ~300k-token conversation through two gateways that
    differ only in how they reach the same engine: ``/v1/completions`` with the ids as JSON,
    and vLLM's gRPC service with them as protobuf varints. Each is set against its own direct
    path (the same request sent straight to the engine; the gRPC one by a grpcio client)."""
    import workloads
    from deepseek_recipe.backends import GenerationRequest
    from deepseek_recipe.backends.completions import CompletionsBackend
    from deepseek_recipe.backends.vllm_grpc import VllmGrpcBackend

    target = 60_000 if args.quick else 300_000
    rounds = 4 if args.quick else 8
    conv = workloads.make_conversation(20261203, target)  # new to both gateways
    steps = len(conv.steps)
    writers = {"json": CompletionsBackend("http://unused"), "grpc": VllmGrpcBackend("grpc://unused:1")}
    gateways = {"json": "gateway", "grpc": "gateway_grpc"}
    rows: list[dict[str, Any]] = []
    warm = 3  # a conversation's first bodies are kept, not resumed (as in the paced phase)
    for k in range(rounds + warm):
        raw = json.dumps(to_chat_body(workloads, conv, steps - rounds - warm + k), ensure_ascii=False).encode()
        prepared = frontend.prepare("chat", raw)
        request = GenerationRequest.from_prepared(prepared, "bench")
        bodies = {name: writer.body(request) for name, writer in writers.items()}
        row: dict[str, Any] = {"prompt_tokens": len(prepared.prompt_ids)}
        # The gateways first, then the direct paths: another process's after-work (an engine
        # freeing the last request's 300k ids) would otherwise land on the next request timed.
        for name in list(gateways)[:: 1 if k % 2 == 0 else -1]:
            port = ports[gateways[name]]
            time.sleep(REPEAT_GAP)
            before = cpu_seconds(port)
            via = asyncio.run(latencies(port, PATHS["chat"], [raw]))[0].total
            row[name] = {
                "body_bytes": len(bodies[name]),
                "gateway_ms": via * 1e3,
                "cpu_ms": (cpu_seconds(port) - before) * 1e3,
            }
        for name in gateways:
            time.sleep(REPEAT_GAP)
            repeated = [bodies[name]] * REPEATS
            if name == "json":
                direct = median_total(
                    asyncio.run(latencies(ports["engine"], "/v1/completions", repeated, gap=REPEAT_GAP))
                )
            else:
                direct = statistics.median(asyncio.run(grpc_latencies(ports["grpc_engine"], repeated, REPEAT_GAP)))
            row[name]["direct_ms"] = direct * 1e3
            row[name]["added_ms"] = row[name]["gateway_ms"] - direct * 1e3
        if k >= warm:
            rows.append(row)
    report.figures["grpc"] = rows
    report.start("grpc")
    report.add(f"#### Growing agent turn to the engine as JSON and as gRPC (Chat, ~{target // 1000}k tokens)")
    report.add()
    report.add(
        f"{rounds} turns of another conversation through two gateways, `--backend completions` (the ids as "
        "JSON) and `--backend vllm-grpc` (the ids as protobuf), taking turns going first, in front of the same "
        "fake engine behind each API; each against its own direct path (the same engine request sent straight, "
        f"median of {REPEATS}). Medians over the turns."
    )
    report.add()
    report.add("| prompt tokens | JSON: gateway ms | direct ms | added ms | gRPC: gateway ms | direct ms | added ms |")
    report.add("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        cells = " | ".join(
            f"{row[n]['gateway_ms']:.1f} | {row[n]['direct_ms']:.1f} | {row[n]['added_ms']:.1f}" for n in gateways
        )
        report.add(f"| {row['prompt_tokens']:,} | {cells} |")
    report.add()
    report.add("| engine API | engine request MB | gateway ms | direct ms | added ms | gateway CPU per turn ms |")
    report.add("|---|---:|---:|---:|---:|---:|")
    summary = {}
    for name, title in (("json", "/v1/completions (JSON)"), ("grpc", "gRPC (protobuf)")):
        med = {key: statistics.median(r[name][key] for r in rows) for key in rows[0][name]}
        summary[name] = med
        report.add(
            f"| {title} | {med['body_bytes'] / 1e6:.2f} | {med['gateway_ms']:.1f} | {med['direct_ms']:.1f} "
            f"| {med['added_ms']:.1f} | {med['cpu_ms']:.1f} |"
        )
    report.add()
    report.add(
        f"Whole turn through the gateway: {summary['grpc']['gateway_ms']:.1f} ms over gRPC vs "
        f"{summary['json']['gateway_ms']:.1f} ms over JSON "
        f"({summary['json']['gateway_ms'] / summary['grpc']['gateway_ms']:.2f}x); the engine request is "
        f"{summary['json']['body_bytes'] / summary['grpc']['body_bytes']:.1f}x smaller."
    )


def to_chat_body(workloads: Any, conv: Any, steps: int) -> dict[str, Any]:
    """The conversation's first ``steps`` steps as a streamed Chat body."""
    body: dict[str, Any] = workloads.to_chat(workloads.truncated(conv, steps), {"stream": True})
    return body


PAUSES = (0.0, 0.1, 1.0)


def pause_probe(pause: float, rounds: int) -> None:
    """(Run as a subprocess: ``--pause-probe``.) Growing ~300k-token Chat turns prepared as the
    gateway prepares them (``Intake.encode`` in a worker thread), each after ``pause`` seconds,
    through an intake with the cache and one without, in turn; then, after the same pause, the
    new turn's text encoded alone and one pass over the previous body. Prints medians (ms) as
    JSON."""
    import threading

    import workloads
    from deepseek_recipe.frontend import Frontend
    from deepseek_recipe.gateway.intake import Intake
    from deepseek_recipe.gateway.settings import GatewaySettings

    frontend = Frontend()
    encoding = frontend.encoding(frontend.options.model_versions_by_name[MODEL])
    conv = workloads.make_conversation(20261201, 300_000)
    steps = len(conv.steps)
    warm = 3  # the first bodies of a conversation are kept, not resumed (docs/gateway.md)
    bodies = [
        json.dumps(workloads.to_chat(workloads.truncated(conv, steps - rounds - warm + k), {"stream": True}))
        for k in range(rounds + warm)
    ]
    prompts = [
        encoding.render_conversation(frontend.prepare("chat", b.encode()).request.conversation).prompt for b in bodies
    ]
    gates = {
        "cache": Intake(GatewaySettings(store="none"), frontend),
        "no_cache": Intake(GatewaySettings(store="none", intake_cache_bytes=0), frontend),
    }
    times: dict[str, list[float]] = {"cache": [], "no_cache": [], "new_text": [], "pass": []}

    def timed(name: str, k: int, call: Any, *args: Any) -> None:
        time.sleep(pause)
        start = time.perf_counter()
        call(*args)
        if k >= warm:
            times[name].append((time.perf_counter() - start) * 1e3)

    def run() -> None:
        for k, text in enumerate(bodies):
            raw = text.encode()
            for name in ["cache", "no_cache"][:: 1 if k % 2 else -1]:
                timed(name, k, gates[name].encode, "chat", raw, None, "bench")
            if k == 0:
                continue
            common = len(os.path.commonprefix([prompts[k - 1], prompts[k]]))  # noqa: RUF071
            fresh = prompts[k][common:] + f" {pause} {k}"  # never seen by the tokenizer's caches
            timed("new_text", k, frontend.tokenizer.encode_ordinary, fresh)
            previous = bodies[k - 1].encode()
            timed("pass", k, previous.count, b"\0")

    worker = threading.Thread(target=run)  # the gateway prepares long bodies in a worker thread
    worker.start()
    worker.join()
    print(json.dumps({name: statistics.median(values) for name, values in times.items()}))


def pause_phase(report: Report, args: argparse.Namespace) -> None:
    """A turn after a pause: the in-process preparation of a growing turn after 0, 0.1 and 1 s
    of waiting, with malloc as it comes and as ``serve`` tunes it (huge pages)."""
    from deepseek_recipe.gateway.server import HUGE_PAGE_TUNABLES

    rounds = 4 if args.quick else 12
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    rows = []
    for pause in PAUSES:
        for tunables in (None, HUGE_PAGE_TUNABLES):
            out = subprocess.run(
                [sys.executable, __file__, "--pause-probe", str(pause), str(rounds)],
                env={**env, "GLIBC_TUNABLES": tunables} if tunables else env,
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append({"pause": pause, "huge_pages": tunables is not None, **json.loads(out.stdout)})
    report.figures["pause"] = rows
    report.start("pause")
    report.add("#### A turn after a pause (in process, a worker thread, ~300k-token Chat turns)")
    report.add()
    report.add(
        f"Each growing turn prepared (`Intake.encode`) after a pause, medians of {rounds}; the new turn's text "
        "encoded alone and one pass over the previous body (`bytes.count`) after the same pause. Huge pages: "
        f"`GLIBC_TUNABLES={HUGE_PAGE_TUNABLES}`, as `serve` sets it."
    )
    report.add()
    report.add(
        "| pause s | huge pages | prepare, intake cache ms | prepare, no cache ms | new text alone ms "
        "| pass over the previous body ms |"
    )
    report.add("|---:|---|---:|---:|---:|---:|")
    for row in rows:
        report.add(
            f"| {row['pause']:g} | {'yes' if row['huge_pages'] else 'no'} | {row['cache']:.2f} | {row['no_cache']:.2f} "
            f"| {row['new_text']:.2f} | {row['pass']:.2f} |"
        )
    report.add()
    # The measure of a growing turn (at most 3x encoding the new text alone, plus a pass
    # over the body), with both sides taken in the same state: after the same pause, as serve runs.
    for row in rows:
        if not row["huge_pages"]:
            continue
        bound = 3 * row["new_text"] + row["pass"]
        verdict = "within" if row["cache"] <= bound else "over"
        report.add(
            f"- after {row['pause']:g} s: preparing the turn took {row['cache']:.2f} ms, "
            f"{row['cache'] / row['new_text']:.1f}x encoding its new text alone after the same pause; "
            f"3x that plus a pass over the body is {bound:.2f} ms ({verdict})."
        )


def ten_below_litellm(report: Report, key: str, what: str, ours: float, theirs: float, extra: str = "") -> None:
    """The target of being at least 10x below LiteLLM's added time, reported and recorded."""
    below = theirs / ours
    report.add(
        f"Target, {what} at least 10x below LiteLLM's: {ours:.3f} ms vs {theirs:.3f} ms, {below:.1f}x "
        f"({'met' if below >= 10 else 'MISSED'}){extra}."
    )
    report.record["targets"][key] = {
        "measured": f"{what} {ours:.3f} ms vs LiteLLM's {theirs:.3f} ms: {below:.1f}x below{extra}",
        "met": below >= 10,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, short runs")
    parser.add_argument("--no-record", action="store_true", help="print only: no record, bench/results.md untouched")
    parser.add_argument(
        "--results", type=Path, default=R.RESULTS, help="the results file to rewrite (records go to results/ beside it)"
    )
    parser.add_argument(
        "--only", default="small,agent,paced,grpc,intake,pause", help="phases: small,agent,paced,grpc,intake,pause"
    )
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--slow", action="store_true", help="small requests on one core (all pinned to CPU 1, CPU 0 kept busy)"
    )
    parser.add_argument("--project-python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--litellm-python", default=str(ROOT / "bench" / ".venv-litellm" / "bin" / "python"))
    parser.add_argument("--serve-engine", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-grpc-engine", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-relay", type=int, nargs=2, help=argparse.SUPPRESS)  # its port, the engine's
    parser.add_argument("--script", help=argparse.SUPPRESS)
    parser.add_argument("--pause-probe", type=float, nargs=2, help=argparse.SUPPRESS)  # the pause, rounds
    args = parser.parse_args()
    if args.serve_engine:
        serve_engine(args.serve_engine, args.script)
        return 0
    if args.serve_grpc_engine:
        serve_grpc_engine(args.serve_grpc_engine, args.script)
        return 0
    if args.serve_relay:
        serve_relay(*args.serve_relay, args.script)
        return 0
    if args.pause_probe:
        pause_probe(args.pause_probe[0], int(args.pause_probe[1]))
        return 0
    # Compared unresolved: a virtualenv's python is a link to the system's.
    if Path(sys.executable).absolute() != Path(args.project_python).absolute():
        # Run the whole bench in the project's virtualenv (it imports deepseek_recipe).
        return subprocess.call([args.project_python, __file__, *sys.argv[1:]])

    busy = None
    if args.slow:
        args.only = "small"
        os.sched_setaffinity(0, {1})  # the servers started below inherit it
        busy = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
    try:
        return run(args)
    finally:
        if busy is not None:
            busy.kill()


def run(args: argparse.Namespace) -> int:
    import deepseek_recipe as dr
    from deepseek_recipe.frontend import Frontend

    frontend = Frontend()
    ids = frontend.tokenizer.encode(ANSWER)
    script = {"ids": ids, "texts": [frontend.tokenizer.decode([i]) for i in ids]}
    command = f"python3 bench/gateway_bench.py {' '.join(sys.argv[1:])}".rstrip()
    report = Report(R.new_record("gateway", dt.datetime.now(dt.timezone.utc), command, args.quick))
    print(R.run_title(report.record) + "\n", flush=True)
    m = report.record["machine"]
    report.record["versions"]["project"] = {"version": dr.__version__, "where": str(Path(dr.__file__).parent)}
    report.add(f"- command: `{command}`")
    report.add(
        f"- machine: {m['nproc']} CPUs, {m['cpu']}, {m['memory']} RAM; {m['os']}; "
        f"load average {m['load_start']} at start"
    )
    report.add(f"- ours: deepseek-recipe-rs {dr.__version__}, `{Path(dr.__file__).parent}`")
    litellm = Path(args.litellm_python)
    with tempfile.TemporaryDirectory() as tmp:
        script_path = Path(tmp) / "script.json"
        script_path.write_text(json.dumps(script))
        ports = {"engine": free_port(), "gateway": free_port(), "relay": free_port()}
        engine_cmd = [sys.executable, __file__, "--serve-engine", str(ports["engine"]), "--script", str(script_path)]
        relay_cmd = relay_command(tmp, ports["relay"], ports["engine"])
        ports["relay_c"] = free_port()
        c_relay_cmd = c_relay_command(tmp, ports["relay_c"], ports["engine"])
        if c_relay_cmd is None:
            del ports["relay_c"]
        gateway_cmd = [
            sys.executable,
            "-m",
            "deepseek_recipe",
            "serve",
            "--backend",
            "completions",
            "--backend-urls",
            f"http://127.0.0.1:{ports['engine']}",
            "--port",
            str(ports["gateway"]),
            "--log-requests",
            "false",
            "--max-concurrent-requests",
            "1024",
        ]
        # The agent turns are also timed on a gateway without the intake cache (what a turn costs
        # that reuses nothing).
        ports["gateway_cold"] = free_port()
        cold_cmd = [str(ports["gateway_cold"]) if a == str(ports["gateway"]) else a for a in gateway_cmd]
        cold_gateway = (
            process(cold_cmd, ports["gateway_cold"], env={"DEEPSEEK_RECIPE_INTAKE_CACHE_BYTES": "0"})
            if "agent" in args.only
            else nullcontext()
        )
        # The paced turns go to two gateways of their own, one without huge pages.
        more_servers: list[Any] = []
        if "paced" in args.only:
            for name, env in (("gateway_paced", {}), ("gateway_small_pages", {"DEEPSEEK_RECIPE_HUGE_PAGES": "false"})):
                ports[name] = free_port()
                command = [str(ports[name]) if a == str(ports["gateway"]) else a for a in gateway_cmd]
                more_servers.append(process(command, ports[name], env=env))
        # The gRPC turns go to a fake engine behind vLLM's gRPC service, through a gateway of their own.
        if "grpc" in args.only:
            ports["grpc_engine"], ports["gateway_grpc"] = free_port(), free_port()
            grpc_engine_cmd = [sys.executable, __file__, "--serve-grpc-engine", str(ports["grpc_engine"])]
            more_servers.append(process([*grpc_engine_cmd, "--script", str(script_path)], ports["grpc_engine"]))
            command = [str(ports["gateway_grpc"]) if a == str(ports["gateway"]) else a for a in gateway_cmd]
            command[command.index("completions")] = "vllm-grpc"
            command[command.index(f"http://127.0.0.1:{ports['engine']}")] = f"grpc://127.0.0.1:{ports['grpc_engine']}"
            more_servers.append(process(command, ports["gateway_grpc"]))
        with (
            process(engine_cmd, ports["engine"]),
            process(gateway_cmd, ports["gateway"]),
            cold_gateway,
            process(relay_cmd, ports["relay"]),
            process(c_relay_cmd, ports["relay_c"]) if c_relay_cmd is not None else nullcontext(),
            ExitStack() as more,
        ):
            for server in more_servers:
                more.enter_context(server)
            litellm_ctx: Any = None
            if litellm.exists():
                ports["litellm"] = free_port()
                config = Path(tmp) / "litellm.yaml"
                config.write_text(
                    f"model_list:\n  - model_name: {MODEL}\n    litellm_params:\n      model: openai/{MODEL}\n"
                    f"      api_base: http://127.0.0.1:{ports['engine']}/v1\n      api_key: unused\n"
                    "litellm_settings:\n  telemetry: false\n  drop_params: true\n"
                )
                version = subprocess.run(
                    [str(litellm), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                report.record["versions"]["litellm"] = {"version": version, "where": str(litellm)}
                report.add(f"- LiteLLM proxy {version}, `{litellm}` (its own virtualenv; default settings)")
                # Its cost map ships with it: no fetch from the network (there is none here).
                env = {"LITELLM_LOG": "ERROR", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": MASTER_KEY}
                litellm_ctx = process(
                    [
                        str(litellm.parent / "litellm"),
                        "--config",
                        str(config),
                        "--port",
                        str(ports["litellm"]),
                        "--host",
                        "127.0.0.1",
                    ],
                    ports["litellm"],
                    env=env,
                )
            else:
                report.add("- LiteLLM: skipped (no virtualenv at --litellm-python)")
            report.add()
            if litellm_ctx is not None:
                litellm_ctx.__enter__()
            try:
                if "small" in args.only:
                    small_phase(report, args, frontend, ports)
                if "agent" in args.only:
                    agent_phase(report, args, frontend, ports)
                    agent_phase(report, args, frontend, ports, "messages")
                if "paced" in args.only:
                    paced_phase(report, args, frontend, ports)
                if "grpc" in args.only:
                    grpc_phase(report, args, frontend, ports)
                if "intake" in args.only:
                    intake_phase(report, args, frontend)
                if "pause" in args.only:
                    pause_phase(report, args)
            finally:
                if litellm_ctx is not None:
                    litellm_ctx.__exit__(None, None, None)
    if not args.no_record:
        R.save(report.record, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
