"""The gateway's settings: one pydantic model, filled from ``deepseek-recipe serve`` flags,
``DEEPSEEK_RECIPE_*`` environment variables and a TOML settings file (``--config``), in that order
of precedence, with defaults that are safe to run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from deepseek_recipe.frontend import DEFAULT_CONTEXT_LIMIT, DEFAULT_MAX_IMAGE_PIXELS
from deepseek_recipe.routing import RoutingPolicy

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

BackendKind = Literal["demo", "completions", "sglang", "vllm-grpc", "sglang-grpc"]


class ApiKey(BaseModel):
    """One API key of the settings file's ``[keys.<name>]`` tables, with its own limits (none:
    unlimited beyond the gateway's). The name, never the key, appears in logs and metrics."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: SecretStr = Field(description="the key, as clients send it")
    concurrent_requests: int | None = Field(default=None, ge=1, description="requests served at once")
    requests_per_minute: int | None = Field(default=None, ge=1, description="requests begun per minute")
    tokens_per_minute: int | None = Field(
        default=None, ge=1, description="prompt tokens (counted when encoded) and completion tokens (as they stream)"
    )

    @property
    def limited(self) -> bool:
        return (self.concurrent_requests, self.requests_per_minute, self.tokens_per_minute) != (None, None, None)


class GatewaySettings(BaseSettings):
    """Everything ``deepseek-recipe serve`` and :func:`deepseek_recipe.gateway.create_app` take.

    Lists (``backend_urls``, ``api_keys``) are comma-separated in the environment.
    """

    model_config = SettingsConfigDict(env_prefix="DEEPSEEK_RECIPE_", extra="ignore", frozen=True)

    config: Path | None = Field(
        default=None,
        description="a TOML settings file: any setting by name, and API keys with limits of their own "
        "([keys.<name>] tables); flags and environment variables win over it",
    )

    # -- serving ---------------------------------------------------------------------------
    host: str = Field(default="127.0.0.1", description="address to listen on")
    port: int = Field(default=8000, ge=0, le=65535, description="port to listen on")
    workers: int = Field(default=1, ge=1, description="server processes (each loads the tokenizer once)")
    huge_pages: bool = Field(
        default=True,
        description="serve (on Linux with glibc) starts itself again with GLIBC_TUNABLES asking malloc for "
        "transparent huge pages in one arena, unless GLIBC_TUNABLES is already set",
    )
    shutdown_grace: float = Field(
        default=30.0,
        ge=0,
        description="seconds requests in flight may take to finish after SIGTERM; the rest are then "
        "ended with an error and aborted at the engine",
    )

    # -- the engine ------------------------------------------------------------------------
    backend: BackendKind = Field(
        default="demo",
        description="demo: the embedded engine (no weights); completions: an OpenAI-compatible "
        "/v1/completions server taking token ids (vLLM, SGLang, llama.cpp); sglang: SGLang's /generate; "
        "vllm-grpc: vLLM's gRPC entrypoint (vllm serve --grpc; URLs grpc://host:port; the grpc extra); "
        "sglang-grpc: SGLang's gRPC mode (sglang serve --smg-grpc-mode; the same URLs and extra)",
    )
    backend_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="engine base URLs, comma-separated; several are routed (see routing)"
    )
    backend_model: str | None = Field(default=None, description="model name sent to the engine (default: the client's)")
    backend_token_ids: bool = Field(
        default=True, description="completions: ask for output token ids (vLLM return_token_ids) rather than text"
    )
    demo_token_delay: float = Field(default=0.0, ge=0, description="demo engine: seconds per output token")

    # -- routing over several backend URLs -------------------------------------------------
    routing: RoutingPolicy = Field(
        default="prefix",
        description="prefix: the replica most likely holding the prompt's longest prefix in KV cache, "
        "within its load share; least_loaded; round_robin",
    )
    block_size: int = Field(default=128, ge=1, description="the engines' KV-cache block size, in tokens")
    routing_load_factor: float = Field(
        default=1.25, ge=1.0, description="prefix routing: skip a replica over this multiple of the mean in-flight load"
    )
    routing_memory_blocks: int = Field(
        default=131_072, ge=0, description="prefix routing: block hashes each process remembers (0: rendezvous only)"
    )
    replica_cooldown: float = Field(
        default=2.0, gt=0, description="seconds a failed replica rests (doubling while it fails, up to 60)"
    )

    # -- the front end ---------------------------------------------------------------------
    tokenizer: Path | None = Field(default=None, description="tokenizer.json (default: the DeepSeek V4 tokenizer)")
    context_limit: int = Field(default=DEFAULT_CONTEXT_LIMIT, ge=1, description="prompt + completion tokens")
    default_thinking: bool = Field(default=True, description="thinking mode when a request does not say")
    max_choices: int = Field(
        default=16, ge=1, le=255, description="most choices a Chat request may ask for with n (the engine samples them)"
    )
    intake_cache_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=0,
        description="bytes of recent Chat and Messages conversations' last bodies each process keeps, so "
        "the next body parses and renders only what it adds (estimated; 0: off)",
    )

    # -- limits ----------------------------------------------------------------------------
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list, description="accepted keys (Authorization: Bearer or x-api-key); none: open"
    )
    keys: dict[str, ApiKey] = Field(
        default_factory=dict,
        description="named API keys with limits of their own (the settings file's [keys.<name>] tables; "
        "JSON here); each is accepted as api_keys are",
    )
    limits_url: str | None = Field(
        default=None,
        description="redis://… (or rediss://, unix://): the keys' limits counted in this Redis server, "
        "shared by every gateway process using it (the redis extra); none: each process counts its own",
    )
    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1, description="largest request body")
    max_json_depth: int = Field(
        default=127,
        ge=1,
        le=127,
        description="deepest nesting of arrays and objects a body may have (the parser refuses 128 levels)",
    )
    max_concurrent_requests: int = Field(
        default=256, ge=1, description="requests served at once, counted once their body is in; more get 429"
    )
    header_timeout: float = Field(
        default=10.0, gt=0, description="seconds for a client to send a request's headers (the connection closes)"
    )
    body_timeout: float = Field(default=60.0, gt=0, description="seconds for a client to send a whole body (408)")
    max_connections: int = Field(
        default=1000, ge=1, description="client connections open at once; more are closed at once"
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host header values served besides loopback names when bound to loopback "
        "(comma-separated; * serves any host)",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="origins whose browser pages may call the APIs (comma-separated; * any); none by default",
    )
    connect_timeout: float = Field(default=10.0, gt=0, description="seconds for the engine to accept a request")
    first_token_timeout: float = Field(default=300.0, gt=0, description="seconds from acceptance to first output")
    idle_timeout: float = Field(default=60.0, gt=0, description="seconds between two outputs")
    total_timeout: float = Field(default=3600.0, gt=0, description="seconds for a whole request")
    keepalive_interval: float = Field(default=10.0, gt=0, description="seconds between SSE keep-alive comments")
    log_requests: bool = Field(default=True, description="one structured log line per request")
    tracing: bool = Field(
        default=False,
        description="OpenTelemetry spans per request (the tracing extra), exported as the OTEL_* "
        "variables say; the caller's traceparent is honoured and passed to the engine",
    )
    webui: bool = Field(default=True, description="serve the visualizer page and its API at /webui/ (and /)")
    webui_max_body_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1, description="largest body of a call to the page's API (413 beyond)"
    )

    # -- stored Responses and conversations (docs/gateway.md, "Stored responses") ----------
    store: str = Field(
        default="sqlite",
        description="where stored responses and conversations live: sqlite (a file under store_dir), "
        "sqlite:///path/to/file, postgresql://… (the postgres extra; several gateways share it), "
        "memory, or none",
    )
    store_dir: Path | None = Field(
        default=None,
        description="the SQLite store's directory (default $XDG_DATA_HOME/deepseek-recipe, else "
        "~/.local/share/deepseek-recipe), created on first start",
    )
    store_retention_days: float = Field(
        default=30.0, ge=0, description="days a conversation is kept after its last turn (0: forever)"
    )
    store_cleanup_interval: float = Field(default=60.0, gt=0, description="seconds between expiry sweeps")
    store_cache_bytes: int = Field(
        default=256 * 1024 * 1024, ge=0, description="bytes of recent turns' state each process keeps in memory"
    )
    store_max_object_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1, description="largest stored response (its request and response together)"
    )
    store_pool_size: int = Field(default=8, ge=1, description="postgresql: connections per process")
    background_retention: float = Field(
        default=600.0,
        ge=0,
        description="seconds a finished background response's events (and, failed or cancelled, the "
        "response) stay in memory for GET and stream resumption",
    )
    background_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=0,
        description="bytes of background responses' events each process keeps: finished ones go first, "
        "oldest first; a running one that would still go over keeps none (it is then only polled)",
    )

    # -- V4.1 images --
    image_networks: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="networks image URLs may point into besides globally routable addresses "
        "(comma-separated CIDRs, e.g. 10.1.0.0/16); none by default",
    )
    image_workers: int = Field(
        default=8, ge=1, description="requests whose images are fetched and preprocessed at once (others wait)"
    )
    max_image_pixels: int = Field(
        default=DEFAULT_MAX_IMAGE_PIXELS, ge=1, description="pixels the images of one request may hold (400 beyond)"
    )

    @model_validator(mode="before")
    @classmethod
    def _settings_file(cls, data: Any) -> Any:
        """The settings file's values under those of flags and the environment."""
        if not isinstance(data, dict) or not data.get("config"):
            return data
        path = Path(data["config"])
        try:
            with path.open("rb") as file:
                values = tomllib.load(file)
        except OSError as error:
            raise ValueError(f"cannot read the settings file {path}: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"the settings file {path} is not valid TOML: {error}") from None
        values = {name.replace("-", "_"): value for name, value in values.items()}
        unknown = sorted(set(values) - set(cls.model_fields) - {"config"})
        if unknown:
            raise ValueError(f"the settings file {path} has unknown settings: {', '.join(unknown)}")
        return {**values, **data}

    def accepted_keys(self) -> list[bytes]:
        """Every key a client may send: ``api_keys`` and those of ``keys``."""
        listed = [key.get_secret_value().encode() for key in self.api_keys]
        return listed + [entry.key.get_secret_value().encode() for entry in self.keys.values()]

    @field_validator("backend_urls", "api_keys", "image_networks", "allowed_hosts", "cors_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("image_networks")
    @classmethod
    def _networks(cls, networks: list[str]) -> list[str]:
        from deepseek_recipe._native import ReqwestImageFetcher

        ReqwestImageFetcher().with_allowed_networks(networks)  # ValueError for a malformed one
        return networks

    @field_validator("limits_url")
    @classmethod
    def _redis_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("limits_url must be a redis://, rediss:// or unix:// URL")
        return url

    @field_validator("backend_urls")
    @classmethod
    def _no_trailing_slash(cls, urls: list[str]) -> list[str]:
        return [url.rstrip("/") for url in urls]
