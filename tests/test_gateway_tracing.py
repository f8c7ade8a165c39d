"""OpenTelemetry tracing, captured with the SDK's in-memory exporter: the span tree of one
streamed request in each protocol, the caller's ``traceparent`` honoured and passed on to a
fake engine, no prompt text in any attribute; the per-stage histograms; ``serve --tracing``
with ``OTEL_TRACES_EXPORTER=none``; nothing of OpenTelemetry imported when tracing is off."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import deepseek_recipe as dr
from deepseek_recipe.backends.completions import CompletionsBackend
from deepseek_recipe.backends.pool import BackendPool
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings
from deepseek_recipe.gateway.tracing import Tracing
from tests.gateway_support import ServerThread, check_stream, serving, settle
from tests.ops_support import OpsEngine, serve_process

MODEL = "DeepSeek-V4-Pro"
MARKER = "ocelot-harbour-5521"  # prompt text that must appear in no span
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"


@pytest.fixture
def traced(tokenizer: dr.Tokenizer) -> Iterator[tuple[InMemorySpanExporter, OpsEngine, ServerThread]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    engine = OpsEngine(tokenizer, script=[[i] for i in tokenizer.encode("The answer is 42.")])
    with serving(engine) as engine_http:
        # Two replicas of one engine: the pool's routing is a stage of its own.
        pool = BackendPool([CompletionsBackend(engine_http.url), CompletionsBackend(engine_http.url + "/")])
        settings = GatewaySettings(log_requests=False, webui=False, store="none")
        gateway = Gateway(settings=settings, frontend=Frontend(tokenizer), backend=pool, tracing=Tracing(provider))
        with serving(gateway) as server:
            yield exporter, engine, server


def _request(protocol: str) -> tuple[str, dict[str, Any]]:
    text = f"Repeat {MARKER} twice."
    if protocol == "chat":
        return "/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": text}]}
    if protocol == "responses":
        return "/v1/responses", {"model": MODEL, "input": text}
    return "/v1/messages", {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


def _tree(spans: list[ReadableSpan], root: ReadableSpan) -> dict[str, Any]:
    """``{name: children's tree}`` under ``root``."""
    assert root.context is not None
    children = [s for s in spans if s.parent is not None and s.parent.span_id == root.context.span_id]
    return {child.name: _tree(spans, child) for child in sorted(children, key=lambda s: s.name)}


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_span_tree_of_a_streamed_request(
    traced: tuple[InMemorySpanExporter, OpsEngine, ServerThread], protocol: str
) -> None:
    exporter, engine, server = traced
    path, body = _request(protocol)
    response = httpx.post(
        server.url + path, json={**body, "stream": True}, headers={"traceparent": TRACEPARENT}, timeout=30
    )
    assert response.status_code == 200
    check_stream(protocol, response.content)
    assert settle(lambda: any(s.name == f"POST {path}" for s in exporter.get_finished_spans()))
    spans = list(exporter.get_finished_spans())
    (root,) = [s for s in spans if s.name == f"POST {path}"]
    assert root.context is not None and root.parent is not None
    # The caller's trace, under the caller's span.
    assert f"{root.context.trace_id:032x}" == TRACE_ID and f"{root.parent.span_id:016x}" == CALLER_SPAN
    assert _tree(spans, root) == {
        "engine_ttft": {},
        "prepare": {"convert": {}, "encode": {}, "parse": {}, "render": {}},
        "read_body": {},
        "route": {},
        "stream": {},
    }
    for span in spans:  # every stage inside the request's time
        assert span.start_time is not None and span.end_time is not None and root.start_time is not None
        assert root.start_time <= span.start_time <= span.end_time
    attributes = dict(root.attributes or {})
    assert attributes["deepseek_recipe.protocol"] == protocol
    assert attributes["http.response.status_code"] == 200 and attributes["deepseek_recipe.stream"] is True
    input_tokens, output_tokens = attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]
    assert isinstance(input_tokens, int) and isinstance(output_tokens, int) and input_tokens > 0 and output_tokens > 0
    assert attributes["deepseek_recipe.request_id"] == response.headers["x-request-id"]
    # The engine got the same trace, under the gateway's request span.
    assert engine.trace_headers[-1]["traceparent"] == f"00-{TRACE_ID}-{root.context.span_id:016x}-01"
    # Counts and ids only: the prompt's text is in no attribute, name or event.
    for span in spans:
        values = [span.name, *map(str, (span.attributes or {}).values())]
        values += [str(v) for event in span.events for v in (event.attributes or {}).values()]
        assert not any(MARKER in value for value in values), span.name


def test_a_request_without_traceparent_starts_a_trace(
    traced: tuple[InMemorySpanExporter, OpsEngine, ServerThread],
) -> None:
    exporter, engine, server = traced
    path, body = _request("chat")
    assert httpx.post(server.url + path, json=body, timeout=30).status_code == 200
    assert settle(lambda: any(s.name == f"POST {path}" for s in exporter.get_finished_spans()))
    (root,) = [s for s in exporter.get_finished_spans() if s.name == f"POST {path}"]
    assert root.parent is None and root.context is not None
    assert engine.trace_headers[-1]["traceparent"].split("-")[1] == f"{root.context.trace_id:032x}"


def test_stage_histograms_have_the_span_names(traced: tuple[InMemorySpanExporter, OpsEngine, ServerThread]) -> None:
    _, _, server = traced
    path, body = _request("messages")
    assert httpx.post(server.url + path, json={**body, "stream": True}, timeout=30).status_code == 200
    metrics = httpx.get(server.url + "/metrics").text
    for stage in ("read_body", "prepare", "parse", "convert", "render", "encode", "route", "engine_ttft", "stream"):
        assert f'deepseek_recipe:request_stage_seconds_count{{stage="{stage}"}} 1.0' in metrics, stage


def test_serve_with_tracing_and_no_exporter() -> None:
    with serve_process("--tracing", "true", "--store", "none", env={"OTEL_TRACES_EXPORTER": "none"}) as served:
        path, body = _request("chat")
        response = httpx.post(served.url + path, json=body, headers={"traceparent": TRACEPARENT}, timeout=60)
        assert response.status_code == 200


def test_unknown_exporter_is_named() -> None:
    code = (
        "from deepseek_recipe.gateway.tracing import tracing_from_settings\n"
        "try:\n    tracing_from_settings(True)\nexcept ValueError as e:\n    print(e)\n"
    )
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "carrier-pigeon"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "OTEL_TRACES_EXPORTER 'carrier-pigeon' is not supported" in out


def test_nothing_of_opentelemetry_is_imported_when_tracing_is_off() -> None:
    code = (
        "import sys\n"
        "from deepseek_recipe.gateway import create_app\n"
        "create_app(store='none')\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
