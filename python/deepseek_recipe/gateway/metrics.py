"""Prometheus metrics, named like vLLM's and SGLang's (``<prefix>:time_to_first_token_seconds``,
``<prefix>:num_requests_running``, …) so existing dashboards need only a new prefix.

Each gateway has its own registry. With several server processes, set
``PROMETHEUS_MULTIPROC_DIR`` (``deepseek-recipe serve --workers N`` does) and ``/metrics``
aggregates all of them.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

PREFIX = "deepseek_recipe:"

_LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
_TOKEN_BUCKETS = (1, 8, 64, 512, 4096, 32768, 131072, 262144, 524288, 1048576)


class Metrics:
    """The gateway's metrics in ``registry`` (a fresh one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            PREFIX + "requests", "Finished requests by protocol and HTTP status.", ["protocol", "status"], registry=r
        )
        self.running = Gauge(
            PREFIX + "num_requests_running",
            "Requests in flight (being prepared or streaming).",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.ttft = Histogram(
            PREFIX + "time_to_first_token_seconds",
            "From the request's arrival to its first output token.",
            ["protocol"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.itl = Histogram(
            PREFIX + "inter_token_latency_seconds",
            "Between two output chunks of one request.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.e2e = Histogram(
            PREFIX + "e2e_request_latency_seconds",
            "From the request's arrival to its last byte.",
            ["protocol"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.prepare = Histogram(
            PREFIX + "request_prepare_seconds",
            "Parsing, conversion, rendering and encoding of a request.",
            ["protocol"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.stage = Histogram(
            PREFIX + "request_stage_seconds",
            "Each stage of a request, named as its trace span: read_body, prepare (and its steps parse, "
            "convert, render, encode, images), route, engine_ttft, stream.",
            ["stage"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.prompt_tokens = Counter(PREFIX + "prompt_tokens", "Prompt tokens sent to the engine.", registry=r)
        self.prompt_tokens_hist = Histogram(
            PREFIX + "request_prompt_tokens", "Prompt tokens per request.", buckets=_TOKEN_BUCKETS, registry=r
        )
        self.generation_tokens = Counter(PREFIX + "generation_tokens", "Output tokens from the engine.", registry=r)
        self.cached_tokens = Counter(
            PREFIX + "prompt_cache_hit_tokens", "Prompt tokens the engine reported from its prefix cache.", registry=r
        )
        self.disconnects = Counter(
            PREFIX + "client_disconnects", "Requests whose client went away before the end.", registry=r
        )
        self.backend_errors = Counter(PREFIX + "backend_errors", "Engine failures by kind.", ["kind"], registry=r)
        # Per replica of a pool (label: its URL); routes are explained in deepseek_recipe.routing.
        self.replica_running = Gauge(
            PREFIX + "replica_num_requests_running",
            "Requests streaming from each replica.",
            ["replica"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.replica_requests = Counter(
            PREFIX + "replica_requests",
            "Requests each replica accepted, by why it was chosen (prefix, affinity, spilled, "
            "least_loaded, round_robin, failover, retry).",
            ["replica", "route"],
            registry=r,
        )
        self.replica_prompt_tokens = Counter(
            PREFIX + "replica_prompt_tokens", "Prompt tokens sent to each replica.", ["replica"], registry=r
        )
        self.replica_routed_prefix_tokens = Counter(
            PREFIX + "replica_routed_prefix_tokens",
            "Prompt tokens routed to the replica that held them: the prefix this process last sent there.",
            ["replica"],
            registry=r,
        )
        self.replica_cached_tokens = Counter(
            PREFIX + "replica_prompt_cache_hit_tokens",
            "Prompt tokens each replica reported from its prefix cache.",
            ["replica"],
            registry=r,
        )
        self.replica_failures = Counter(
            PREFIX + "replica_failures", "Replica failures that rested it, by kind.", ["replica", "kind"], registry=r
        )

    def exposition(self) -> bytes:
        """The text format for ``GET /metrics``."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)
