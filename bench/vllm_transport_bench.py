"""What a real vLLM spends receiving a long prompt as JSON and as protobuf, measured in one run.

    $VLLM/bin/python bench/vllm_transport_bench.py [--tokens 100000] [--requests 12] [--no-record]

``$VLLM`` is the engine tests' virtualenv (``bash scripts/vllm/env.sh WHEEL`` prints it). The
bench builds the engine tests' tiny model (``tests/vllm/tiny_model.py``: random weights, the
DeepSeek V4 vocabulary, no download) with room for the prompt, then starts vLLM for CPU twice,
one server at a time so that neither competes with the other for the two cores: its OpenAI API
server (``/v1/completions``, the prompt as a JSON list of ids, what ``--backend completions``
sends) and its gRPC entrypoint (``Generate``, the ids as protobuf varints, sent by
``--backend vllm-grpc``'s own backend). Each gets the same prompt of ``--tokens`` ids: once to
fill its prefix cache (the prefill, timed apart), then ``--requests`` more asking for one
token each, 0.3 s apart. With the prompt cached, what is left of a request's time is mostly
vLLM receiving it: parsing, checking and scheduling the ids, then one decode step.

Unless ``--no-record``, the run is recorded as every bench's is (``bench/record.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
import record as R  # noqa: E402

GAP = 0.3


def prompt_ids(tokens: int) -> list[int]:
    """``tokens`` ids of ordinary text (the tokenizer's own, as a long conversation has)."""
    import deepseek_recipe as dr

    frontend = dr.Frontend()
    text = " ".join(f"step {i}: read the file, then change line {i % 97} of it." for i in range(tokens // 8))
    ids = frontend.tokenizer.encode_ordinary(text)
    assert len(ids) >= tokens, "the text is too short for the asked length"
    return ids[:tokens]


async def over_http(url: str, model: str, ids: list[int], requests: int) -> tuple[int, list[float]]:
    import httpx

    body = json.dumps({"model": model, "prompt": ids, "max_tokens": 1, "stream": False}).encode()
    headers = {"content-type": "application/json"}
    times = []
    async with httpx.AsyncClient(timeout=1800) as client:
        for _ in range(requests + 1):
            await asyncio.sleep(GAP)
            start = time.perf_counter()
            response = await client.post(url + "/v1/completions", content=body, headers=headers)
            assert response.status_code == 200, response.status_code
            times.append(time.perf_counter() - start)
    return len(body), times


async def over_grpc(url: str, model: str, ids: list[int], requests: int) -> tuple[int, list[float]]:
    from deepseek_recipe._native import TokenIds
    from deepseek_recipe.backends import GenerationRequest
    from deepseek_recipe.backends.vllm_grpc import VllmGrpcBackend
    from deepseek_recipe.frontend import Sampling

    backend = VllmGrpcBackend(url, connect_timeout=600)
    sampling = Sampling(max_tokens=1, temperature=None, top_p=None, seed=None, logprobs=False, top_logprobs=None)
    prompt = TokenIds(ids)
    times = []
    for k in range(requests + 1):
        await asyncio.sleep(GAP)
        request = GenerationRequest(request_id=f"bench-{k}", model=model, prompt_ids=prompt, sampling=sampling)
        start = time.perf_counter()
        async for _ in backend.generate(request):
            pass
        times.append(time.perf_counter() - start)
    body = backend.body(GenerationRequest(request_id="bench", model=model, prompt_ids=prompt, sampling=sampling))
    await backend.aclose()
    return len(body), times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--keep-logs", type=Path, help="copy the vLLM servers' logs into this folder")
    parser.add_argument("--no-record", action="store_true", help="print only: no record, bench/results.md untouched")
    parser.add_argument("--results", type=Path, default=R.RESULTS)
    args = parser.parse_args()

    import tests.vllm.servers as servers

    import vllm

    command = f"python bench/vllm_transport_bench.py {' '.join(sys.argv[1:])}".rstrip()
    report_record, say = R.begin("vllm_transport", command)
    say(f"- vLLM {vllm.__version__} (CPU), the engine tests' tiny model (2 layers, hidden size 128)")
    report_record["versions"]["vllm"] = {"version": vllm.__version__, "where": str(Path(vllm.__file__).parent)}
    ids = prompt_ids(args.tokens)
    context = 1 << max(14, (args.tokens + 64).bit_length())
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "tests/vllm/tiny_model.py"), str(work / "model")], check=True)
        config = json.loads((work / "model/config.json").read_text())
        config["max_position_embeddings"] = context
        (work / "model/config.json").write_text(json.dumps(config))
        servers.MAX_MODEL_LEN = context
        scripts = servers.Scripts(work / "scripts")
        for name, grpc, client in (("http", False, over_http), ("grpc", True, over_grpc)):
            server = servers.VllmServer(work / "model", scripts, work / f"{name}.log", servers.ENGINE_FLAGS, grpc=grpc)
            try:
                server.wait_ready()
                size, times = asyncio.run(client(server.url, servers.SERVED_NAME, ids, args.requests))
            finally:
                server.stop()
                if args.keep_logs:
                    args.keep_logs.mkdir(parents=True, exist_ok=True)
                    (args.keep_logs / f"{name}.log").write_bytes((work / f"{name}.log").read_bytes())
            rest = times[1:]
            results[name] = {
                "request_bytes": size,
                "prefill_s": times[0],
                "p50_ms": statistics.median(rest) * 1e3,
                "min_ms": min(rest) * 1e3,
                "max_ms": max(rest) * 1e3,
                "times_s": times,
            }
    report_record["figures"] = {"tokens": len(ids), **results}
    add = R.section(report_record, "table")
    add()
    add(f"#### A {len(ids):,}-token prompt, cached, one token asked for ({args.requests} requests each)")
    add()
    add("| vLLM API | request MB | first request (prefill) s | cached request p50 ms | min ms | max ms |")
    add("|---|---:|---:|---:|---:|---:|")
    for name, title in (("http", "`/v1/completions` (ids as JSON)"), ("grpc", "gRPC `Generate` (ids as protobuf)")):
        r = results[name]
        add(
            f"| {title} | {r['request_bytes'] / 1e6:.2f} | {r['prefill_s']:.1f} | {r['p50_ms']:.1f} "
            f"| {r['min_ms']:.1f} | {r['max_ms']:.1f} |"
        )
    saved = results["http"]["p50_ms"] - results["grpc"]["p50_ms"]
    add()
    add(
        f"Over gRPC a cached request took {saved:.1f} ms less (p50), "
        f"{saved / len(ids) * 1000:.2f} ms per 1,000 prompt tokens; the request is "
        f"{results['http']['request_bytes'] / results['grpc']['request_bytes']:.1f}x smaller."
    )
    if not args.no_record:
        R.save(report_record, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
