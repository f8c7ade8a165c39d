"""How ``deepseek-recipe serve`` runs the gateway under uvicorn, with limits of the server's own.

uvicorn bounds neither the time a client takes to send a request's headers nor the connections
it keeps open (its ``limit_concurrency`` answers 503 once headers are complete: too late for a
client that never completes them), so thousands of half-sent requests could hold every file
descriptor. :func:`http_protocol` subclasses uvicorn's HTTP protocol (httptools) with:

- a cap on open connections: one accepted past ``max_connections`` is closed at once;
- a deadline for headers: a request's headers must be complete ``header_timeout`` seconds after
  the connection opened or the request's first byte came (a connection idle between requests
  is closed by uvicorn's keep-alive timeout), else the connection is closed;
- a size limit for headers: past :data:`MAX_HEADER_BYTES` the request gets 431 and the
  connection is closed.

The body's deadline (``body_timeout``) and the concurrency limit are the gateway's
(``app.py``). :func:`uvicorn_options` gives ``uvicorn.run`` / ``uvicorn.Config`` all of it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import sys
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from deepseek_recipe.gateway.settings import GatewaySettings

MAX_HEADER_BYTES = 64 * 1024
"""The most bytes a request's line and headers may take (431 beyond)."""

KEEP_ALIVE = 75
"""Seconds an idle client connection is kept: longer than common load balancers' 60 s, so a
balancer never reuses a connection the server is closing."""


class GatewayHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the connection cap and the header deadline and size
    limit of the module doc. Subclasses made by :func:`http_protocol` set the limits."""

    max_connections: int = GatewaySettings.model_fields["max_connections"].default
    header_timeout: float = GatewaySettings.model_fields["header_timeout"].default

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._reading_headers = True
        self._header_bytes = 0
        self._unfinished_bytes = 0
        self._too_large = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.max_connections:
            self.transport = transport  # connection_lost closes it again
            transport.close()
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._reading_headers:
            # httptools reports a header once the next line starts: a header line never ended
            # is counted here, as every byte read while the headers are still incomplete.
            self._unfinished_bytes += len(data)
            self._too_large = self._too_large or self._unfinished_bytes > MAX_HEADER_BYTES
        if self._too_large and not self.transport.is_closing():
            self._disarm()
            self.send_431_response()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes, self._too_large = 0, False
        if not self._reading_headers:  # the next request on a kept-alive connection
            self._reading_headers = True
            self._arm()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._count(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._count(len(name) + len(value) + 4)  # with ": " and the line's end

    def on_headers_complete(self) -> None:
        self._reading_headers = False
        self._unfinished_bytes = 0
        self._disarm()
        if not self._too_large:  # else answered with 431, never run
            super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._too_large:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._too_large:
            super().on_message_complete()

    def _count(self, size: int) -> None:
        self._header_bytes += size
        self._too_large = self._too_large or self._header_bytes > MAX_HEADER_BYTES

    def send_431_response(self) -> None:
        message = b"Request header fields too large"
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(message)).encode() + b"\r\nconnection: close\r\n\r\n" + message
        )
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._reading_headers and not self.transport.is_closing():
            self.transport.close()


def http_protocol(settings: GatewaySettings) -> type[GatewayHttpProtocol]:
    """:class:`GatewayHttpProtocol` with the limits of ``settings``."""
    limits = {"max_connections": settings.max_connections, "header_timeout": settings.header_timeout}
    return type("GatewayHttpProtocol", (GatewayHttpProtocol,), limits)


def uvicorn_options(settings: GatewaySettings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` or ``uvicorn.Config``: the protocol with the
    gateway's connection limits, the keep-alive, and no access log (the gateway writes its own
    line per request). Worker processes (``settings.workers`` > 1) build the same protocol from
    the ``DEEPSEEK_RECIPE_*`` environment (see :data:`EnvHttpProtocol`)."""
    http: type[GatewayHttpProtocol] | str = http_protocol(settings)
    if settings.workers > 1:
        http = f"{__name__}:EnvHttpProtocol"
    return {"http": http, "timeout_keep_alive": KEEP_ALIVE, "access_log": False}


def warnings_at_start(settings: GatewaySettings) -> list[str]:
    """What ``serve`` warns about before it starts: listening beyond this machine with no API
    key (anyone who can reach the port can use the engine and the page's API)."""
    from deepseek_recipe.gateway.app import is_loopback

    if settings.api_keys or settings.keys or is_loopback(settings.host):
        return []
    return [
        f"listening on {settings.host} with no API key: anyone who can reach port {settings.port} "
        "can use the engine (set --api-keys or DEEPSEEK_RECIPE_API_KEYS)"
    ]


def freeze_startup_objects() -> None:
    """Move every object alive now (modules, settings, the app and its tables) out of the
    cycle collector's reach, for a process that serves the gateway and nothing else.

    Python's oldest-generation collection walks every container in the process; with the
    gateway's ~56,000 startup objects and its tokenizer's tables it took about 30 ms, paid by
    whichever request allocated at the wrong moment. Objects made at startup live as long as
    the process, so none of them is ever garbage; frozen, they are skipped (``gc.freeze``).
    Called by ``serve`` and :func:`~deepseek_recipe.gateway.app.app_from_env` once the app is
    built; an app embedded in another server is left to its host's choice."""
    gc.collect()
    gc.freeze()


HUGE_PAGE_TUNABLES = "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=1"
"""glibc's malloc asked for transparent huge pages (``madvise``, glibc 2.35 and later) in one
arena, which worker threads then share: a ~300k-token agent turn's work touches megabytes of
state kept since the last turn, and on a virtual machine whose page-table caches went cold
while the process waited, each 4 KiB page of it costs a walk. Measured with a second's pause
between turns (``bench/gateway_bench.py``'s ``pause`` phase): from a sixth to two thirds less
time to prepare a turn, depending on the moment; back to back it changes nothing."""


def huge_page_tunables(settings: GatewaySettings) -> str | None:
    """The ``GLIBC_TUNABLES`` value ``serve`` starts itself again with (``huge_pages``), or
    ``None``: the setting is off, the user set ``GLIBC_TUNABLES`` (theirs is kept as it is, and
    the second start finds it set), or the C library is not glibc on Linux (nothing to ask)."""
    if not settings.huge_pages or "GLIBC_TUNABLES" in os.environ or sys.platform != "linux":
        return None
    if platform.libc_ver()[0] != "glibc":
        return None
    return HUGE_PAGE_TUNABLES


def restart_with_huge_pages(settings: GatewaySettings) -> str | None:
    """Start this process again as it was started, with :func:`huge_page_tunables` (glibc
    reads them only as a process starts; ``execve`` keeps the process and its pid). Returns
    only when it did not: ``None`` when there was nothing to do, else why it could not (a
    warning; the gateway then serves without huge pages)."""
    tunables = huge_page_tunables(settings)
    if tunables is None:
        return None
    try:
        os.execve(sys.executable, sys.orig_argv, {**os.environ, "GLIBC_TUNABLES": tunables})
    except OSError as error:
        return f"serving without huge pages: the process could not start itself again ({error.strerror})"
    return None  # not reached: execve does not return


def __getattr__(name: str) -> Any:
    """``EnvHttpProtocol``: the protocol with the limits the environment sets, made when a worker
    process imports it (uvicorn takes the class by name there)."""
    if name == "EnvHttpProtocol":
        return http_protocol(GatewaySettings())
    raise AttributeError(name)
