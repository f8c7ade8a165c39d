"""What the HTTP server under the gateway costs, against the least a server can cost here.

    python3 bench/server_bench.py [--granian-python PATH] [--requests 400] [--no-record]

Three servers take the same requests from one client in another process, one server at a time:

- **floor**: ``bench/floor_server.c`` (built with ``cc`` into a temporary folder; skipped
  without a compiler), which reads a request's head and ``Content-Length`` bytes of body into
  one buffer and answers: what receiving the bytes costs on this machine, and nothing else;
- **uvicorn**: what ``deepseek-recipe serve`` runs (uvicorn with uvloop and the gateway's
  httptools protocol, ``deepseek_recipe.gateway.server.uvicorn_options``, malloc's tunables as
  ``serve`` sets them), serving an ASGI app that reads the whole body the way the gateway does
  and answers;
- **granian** (with ``--granian-python``, a Python with ``granian`` installed; one worker, its
  uvloop loop): the same app under a server written in Rust, the alternative the request-path
  issue asked to measure.

Each gets a small body (a streamed Chat request's size) and a ~1.2 MB one (the growing agent
turn's), ``--requests`` times each, sequentially on one kept connection, 2 ms apart. Reported:
p50 and p99 of the whole exchange, and what each server adds over the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import record as R  # noqa: E402

SIZES = {"small": 300, "large": 1_200_000}
GAP = 0.002
TITLES = {
    "floor": "`bench/floor_server.c`: read the bytes, answer",
    "uvicorn": "uvicorn + uvloop + the gateway's httptools protocol (what `serve` runs)",
    "granian": "granian (Rust, hyper), one worker, uvloop",
}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Read the whole body as the gateway does (``Intake.read_body``), answer ``ok``. (This
    module imports only the standard library at its top: granian's Python imports it.)"""
    if scope["type"] != "http":
        return
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    b"".join(parts)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def serve_uvicorn(port: int) -> None:
    import uvicorn

    from deepseek_recipe.gateway.server import uvicorn_options
    from deepseek_recipe.gateway.settings import GatewaySettings

    options = uvicorn_options(GatewaySettings())
    uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", log_level="warning", lifespan="off", **options)


def exchange_times(port: int, size: int, requests: int) -> list[float]:
    """Seconds per request of ``size`` body bytes, sequential on one connection (the first
    tenth is a warm-up, dropped)."""
    body = b'{"x":"' + b"a" * max(size - 8, 0) + b'"}'
    head = b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    request = head + b"content-length: %d\r\n\r\n" % len(body) + body
    connection = socket.create_connection(("127.0.0.1", port))
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    warm = requests // 10
    times = []
    try:
        for _ in range(requests + warm):
            time.sleep(GAP)
            start = time.perf_counter()
            connection.sendall(request)
            answer = b""
            while not answer.endswith(b"\r\n\r\nok"):
                piece = connection.recv(65536)
                if not piece:
                    raise RuntimeError("the server closed the connection")
                answer += piece
            times.append(time.perf_counter() - start)
    finally:
        connection.close()
    return times[warm:]


def servers(args: argparse.Namespace, work: Path) -> dict[str, list[str] | None]:
    """Each server's command (its port is added last), or None when it is skipped."""
    compiler = shutil.which("cc")
    floor: list[str] | None = None
    if compiler is not None:
        binary = work / "floor_server"
        subprocess.run([compiler, "-O2", "-o", str(binary), str(ROOT / "bench/floor_server.c")], check=True)
        floor = [str(binary)]
    granian: list[str] | None = None
    if args.granian_python is not None:
        granian = [
            str(args.granian_python), "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1",
            "--workers", "1", "--loop", "uvloop", "--log-level", "warning", "--no-ws",
            "server_bench:app", "--port",
        ]  # fmt: skip
    return {"floor": floor, "uvicorn": [sys.executable, __file__, "--serve-uvicorn"], "granian": granian}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--granian-python", type=Path, help="a Python with granian installed")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--no-record", action="store_true", help="print only: no record, bench/results.md untouched")
    parser.add_argument("--results", type=Path, default=R.RESULTS)
    parser.add_argument("--serve-uvicorn", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_uvicorn is not None:
        serve_uvicorn(args.serve_uvicorn)
        return 0

    report_record, say = R.begin("server", f"python3 bench/server_bench.py {' '.join(sys.argv[1:])}".rstrip())
    import gateway_bench as G
    from deepseek_recipe.gateway.server import HUGE_PAGE_TUNABLES

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in servers(args, Path(tmp)).items():
            if argv is None:
                continue
            port = G.free_port()
            environment = {"PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT / "bench")])}
            if name in ("uvicorn", "granian"):
                # malloc as `serve` sets it for itself (glibc reads it only as a process starts).
                environment["GLIBC_TUNABLES"] = os.environ.get("GLIBC_TUNABLES", HUGE_PAGE_TUNABLES)
            if name == "granian":
                version = subprocess.run(
                    [argv[0], "-c", "import granian; print(granian.__version__)"], capture_output=True, text=True
                ).stdout.strip()
                report_record["versions"]["granian"] = {"version": version, "where": argv[0]}
                say(f"- granian {version}, `{argv[0]}`")
            with G.process([*argv, str(port)], port, env=environment):
                results[name] = {}
                for size_name, size in SIZES.items():
                    times = exchange_times(port, size, args.requests)
                    results[name][size_name] = {
                        "p50_ms": statistics.median(times) * 1e3,
                        "p99_ms": G.percentile(times, 0.99) * 1e3,
                    }
    report_record["figures"] = results
    add = R.section(report_record, "table")
    add()
    add(
        f"#### A POST's whole exchange, client in another process ({args.requests} sequential requests per size, "
        "one kept connection)"
    )
    add()
    add("| server | small body p50 ms | p99 ms | over the floor ms | ~1.2 MB p50 ms | p99 ms | over the floor ms |")
    add("|---|---:|---:|---:|---:|---:|---:|")
    floor = results.get("floor")
    for name, title in TITLES.items():
        if name not in results:
            add(f"| {name}: {title} | skipped | | | | | |")
            continue
        cells = []
        for size_name in SIZES:
            r = results[name][size_name]
            over = f"{r['p50_ms'] - floor[size_name]['p50_ms']:+.3f}" if floor else "n/a"
            cells += [f"{r['p50_ms']:.3f}", f"{r['p99_ms']:.3f}", over]
        add(f"| {name}: {title} | " + " | ".join(cells) + " |")
    if "uvicorn" in results and "granian" in results:
        add()
        ratios = {s: results["granian"][s]["p50_ms"] / results["uvicorn"][s]["p50_ms"] for s in SIZES}
        add(
            f"granian's exchange takes {ratios['small']:.2f}x uvicorn's for the small body and "
            f"{ratios['large']:.2f}x for the ~1.2 MB one (p50)."
        )
    if not args.no_record:
        R.save(report_record, args.results)
    print(json.dumps(results, indent=1) if args.no_record else "", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
