"""OpenTelemetry traces of the gateway's requests: the ``tracing`` setting, the ``tracing`` extra.

Nothing of OpenTelemetry is imported unless ``tracing`` is on. Then each generation request
gets a span (``POST /v1/chat/completions``, kind SERVER), the child of the caller's when the
request carries a W3C ``traceparent``; the engine's request carries the ``traceparent`` of that
span, which vLLM and SGLang read, so their spans join the trace. When the request ends its
stages become child spans, with the times they were measured at:

- ``read_body``;
- ``prepare``, with ``parse``, ``convert``, ``render``, ``encode`` and
  ``images`` (V4.1 requests with images) under it;
- ``route`` (a pool of replicas choosing one);
- ``engine_ttft``: from asking the engine to its first output;
- ``stream``: from the first output to the end.

Attributes are counts and ids (protocol, request id, model, token counts, status, finish
reason, error kind), never text of the request or the output.

Unless the host process already set a tracer provider (``opentelemetry-instrument`` does), one
is made from the standard variables: ``OTEL_TRACES_EXPORTER`` (``otlp``, the default;
``console``; ``none``), ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` (``http/protobuf``, the default,
or ``grpc``), the exporter's own ``OTEL_EXPORTER_OTLP_*`` (endpoint, headers …),
``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` and ``OTEL_BSP_*``.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from deepseek_recipe.gateway.asgi import Scope, header

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from deepseek_recipe.gateway.exchange import Record

PREPARE_STEPS = frozenset({"parse", "convert", "render", "encode", "images"})
"""Stages that are steps of ``prepare`` (their spans are its children)."""


class Tracing:
    """Spans for the gateway's requests from ``provider`` (the global one by default)."""

    def __init__(self, provider: TracerProvider | None = None, *, owned: bool = False) -> None:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        from deepseek_recipe import __version__

        self._trace = trace
        self._provider = provider if provider is not None else trace.get_tracer_provider()
        self._owned = owned
        self._tracer = self._provider.get_tracer("deepseek_recipe.gateway", __version__)
        self._propagator = TraceContextTextMapPropagator()
        self._server = trace.SpanKind.SERVER
        self._error = trace.Status(trace.StatusCode.ERROR)

    def start(self, scope: Scope, record: Record) -> None:
        """Open the request's span (under the caller's ``traceparent``, if any) and give the
        engine's request its ``traceparent``."""
        carrier: dict[str, str] = {}
        for name in ("traceparent", "tracestate"):
            value = header(scope, name.encode())
            if value is not None:
                carrier[name] = value.decode("latin-1")
        parent = self._propagator.extract(carrier) if carrier else None
        # One offset from perf_counter readings to the wall clock for all the request's spans.
        offset = time.time_ns() - time.perf_counter_ns()
        began = int(record.started * 1e9) + offset  # the request's arrival
        span = self._tracer.start_span(
            f"{scope['method']} {scope['path']}",
            context=parent,
            kind=self._server,
            start_time=began,
            attributes={
                "http.request.method": scope["method"],
                "url.path": scope["path"],
                "deepseek_recipe.protocol": record.protocol,
                "deepseek_recipe.request_id": record.request_id,
            },
        )
        record.span = (span, offset)
        outgoing: dict[str, str] = {}
        self._propagator.inject(outgoing, context=self._trace.set_span_in_context(span))
        record.engine_headers = [(name.encode(), value.encode()) for name, value in outgoing.items()]

    def finish(self, record: Record) -> None:
        """The request's stages as child spans; its counts and status on its span; the end."""
        if record.span is None:
            return
        span, offset = record.span
        offset = int(offset)

        def ns(seconds: float) -> int:
            return int(seconds * 1e9) + offset

        context = self._trace.set_span_in_context(span)
        prepare_context = context
        for name, start, end in record.stages:
            if name == "prepare":
                child = self._tracer.start_span(name, context=context, start_time=ns(start))
                child.end(end_time=ns(end))
                prepare_context = self._trace.set_span_in_context(child)
        for name, start, end in record.stages:
            if name != "prepare":
                parent = prepare_context if name in PREPARE_STEPS else context
                child = self._tracer.start_span(name, context=parent, start_time=ns(start))
                child.end(end_time=ns(end))
        attributes: dict[str, Any] = {
            "http.response.status_code": record.status,
            "deepseek_recipe.stream": record.stream,
            "gen_ai.usage.input_tokens": record.prompt_tokens,
            "gen_ai.usage.output_tokens": record.completion_tokens,
            "deepseek_recipe.cached_tokens": record.cached_tokens,
            "deepseek_recipe.client_disconnected": record.disconnected,
        }
        if record.model is not None:
            attributes["gen_ai.request.model"] = record.model
        if record.finish is not None:
            attributes["deepseek_recipe.finish_reason"] = record.finish
        if record.error is not None:
            attributes["error.type"] = record.error
        span.set_attributes(attributes)
        if record.status >= 500:
            span.set_status(self._error)
        span.end(end_time=ns(time.perf_counter()))

    def shutdown(self) -> None:
        """Flush and stop the provider this gateway made (not one the host set)."""
        if self._owned:
            shutdown = getattr(self._provider, "shutdown", None)
            if shutdown is not None:
                shutdown()


def tracing_from_settings(enabled: bool) -> Tracing | None:
    """The gateway's tracing when ``enabled``: the host's tracer provider, else one made from
    the ``OTEL_*`` variables (see the module doc) and set as the global one."""
    if not enabled:
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        raise RuntimeError("tracing needs the tracing extra: pip install 'deepseek-recipe-rs[tracing]'") from None
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return Tracing(current)
    provider = _provider_from_environment()
    trace.set_tracer_provider(provider)
    return Tracing(provider, owned=True)


def _provider_from_environment() -> TracerProvider:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        raise RuntimeError("tracing needs the tracing extra: pip install 'deepseek-recipe-rs[tracing]'") from None

    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "deepseek-recipe"}))
    provider = SdkTracerProvider(resource=resource)
    names = [n.strip() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]
    for name in names:
        exporter: SpanExporter
        if name == "none":
            continue
        if name == "console":
            exporter = ConsoleSpanExporter()
        elif name == "otlp":
            protocol = os.environ.get(
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
            )
            if protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

                exporter = GrpcExporter()
            elif protocol == "http/protobuf":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

                exporter = HttpExporter()
            else:
                raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL {protocol!r} is not supported (grpc, http/protobuf)")
        else:
            raise ValueError(f"OTEL_TRACES_EXPORTER {name!r} is not supported (otlp, console, none)")
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
