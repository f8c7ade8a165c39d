"""Image downloads for the native ``ReqwestImageFetcher`` and ``ImageResolver``.

Why httpx and not a Rust HTTP client: httpx is already the package's engine client, its TLS is
CPython's ``ssl`` (OpenSSL, the system's or certifi's roots), and a custom httpcore network
backend gives the one hook safe fetching needs: the TCP connection itself. A Rust client
(``reqwest``) would add a hundred crates and minutes to every build for the same hook. The
rules stay in Rust: which addresses and schemes are allowed (``deepseek_images::address``),
the limits, the format sniff, and every error's kind and text (the native classes build them
from the outcomes returned here). The native side hands the rules in with each call's settings,
so this module imports nothing of ``_native`` (no import cycle).

How one URL is fetched, hop by hop (at most ``max_redirects`` redirects):

1. the scheme must be ``http`` or ``https`` and the URL must have a host;
2. at connect time the host is resolved ONCE (the system resolver, or the caller's stub), and
   the first address the rule accepts is the one connected to: the check and the connection
   use the same address, so an answer that changes between them cannot matter (DNS
   rebinding). The rule is the caller's ``destination_filter(host, address)`` when set, else
   the fetcher's (globally routable addresses plus any networks the caller allowed). TLS
   still verifies the certificate for the host name. No proxy is ever used;
3. a redirect's target goes through the same steps as a new URL;
4. the body is read as it arrives: past ``max_bytes`` the download stops (``Content-Length``
   is checked first), and in a resolve call the first bytes must already look like PNG, JPEG,
   GIF or WebP (the declared content type is not trusted either way: the bytes decide, as
   they do for data URLs);
5. the total timeout bounds the whole download, redirects included: every read and write on
   the connection waits at most until the download's deadline (a server sending a byte a
   second cannot stretch it), and a redirect to anything but ``http``/``https`` (``data:``,
   ``mailto:``, ``javascript:``) fails the download like any other bad target.

Downloads of one resolve call run concurrently, at most ``concurrency`` at a time.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpcore
import httpx

Outcome = tuple[str, "bytes | None"]
REDIRECTS = {301, 302, 303, 307, 308}


class _Rejected(Exception):
    """No address of the host is allowed."""


class _Stop(Exception):
    def __init__(self, outcome: str) -> None:
        super().__init__(outcome)
        self.outcome = outcome


_deadline = threading.local()
"""``_deadline.at``: the ``time.monotonic()`` by which this thread's download must end."""


def _remaining(timeout: float | None) -> float:
    """``timeout`` cut to what is left of this thread's download (``ReadTimeout`` when none)."""
    left = getattr(_deadline, "at", float("inf")) - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the download's total time is up")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the download's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _remaining(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _remaining(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _remaining(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects to the one address, of the host's resolved addresses, that the rule allowed."""

    def __init__(self, choose: Callable[[str, int], str]) -> None:
        self._inner = httpcore.SyncBackend()
        self._choose = choose

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        address = self._choose(host, port)
        stream = self._inner.connect_tcp(address, port, _remaining(timeout), local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise _Rejected(path)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _PinnedTransport(httpx.BaseTransport):
    def __init__(self, choose: Callable[[str, int], str], connect_timeout: float) -> None:
        self._pool = httpcore.ConnectionPool(network_backend=_PinnedBackend(choose), http1=True, http2=False, retries=0)
        self._connect_timeout = connect_timeout

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        # httpx's own transport maps httpcore's exceptions; this one only needs the stream.
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool.handle_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


class _Body(httpx.SyncByteStream):
    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    def __iter__(self) -> Any:
        yield from self._response.iter_stream()

    def close(self) -> None:
        self._response.close()


class _Settings:
    def __init__(self, settings: tuple[Any, ...]) -> None:
        (
            self.max_bytes,
            self.destination_filter,
            self.rules,
            self.connect_timeout,
            self.total_timeout,
            self.resolver,
            self.concurrency,
            self.max_redirects,
        ) = settings

    def allows(self, host: str, address: str) -> bool:
        if self.destination_filter is None:
            return bool(self.rules.allows_address(address))
        try:
            verdict = self.destination_filter(host, address)
        except Exception:  # a filter that raises rejects the address
            return False
        return verdict is True

    def addresses(self, host: str, port: int) -> list[str]:
        if self.resolver is not None:
            return [str(a) for a in self.resolver(host, port)]
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        seen: list[str] = []
        for info in infos:
            address = str(info[4][0])
            if address not in seen:
                seen.append(address)
        return seen

    def choose(self, host: str, port: int) -> str:
        host = host.strip("[]")
        for address in self.addresses(host, port):
            if self.allows(host, address):
                return address
        raise _Rejected(host)


def _read(response: httpx.Response, settings: _Settings, deadline: float, sniff: bool) -> bytes:
    length = response.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > settings.max_bytes:
        raise _Stop("too_large")
    body = bytearray()
    for chunk in response.iter_raw():  # as the bytes arrive: each read ends by the deadline
        body += chunk
        if len(body) > settings.max_bytes:
            raise _Stop("too_large")
        if time.monotonic() > deadline:
            raise _Stop("fetch")
        if sniff and len(body) >= settings.rules.sniff_bytes and not settings.rules.looks_like_image(bytes(body)):
            break  # not an image: what came so far is enough to say so
    return bytes(body)


def _fetch_one(client: httpx.Client, settings: _Settings, url: str, sniff: bool) -> Outcome:
    deadline = _deadline.at = time.monotonic() + settings.total_timeout
    current = url
    try:
        for _ in range(settings.max_redirects + 1):
            try:
                target = httpx.URL(current)
            except (httpx.InvalidURL, TypeError, ValueError):
                return ("fetch", None)
            if not settings.rules.scheme_allowed(target.scheme) or not target.host:
                return ("fetch", None)
            remaining = max(0.001, deadline - time.monotonic())
            timeout = httpx.Timeout(remaining, connect=min(settings.connect_timeout, remaining))
            # Identity encoding: a compressed body could inflate past any limit between checks.
            request = client.build_request("GET", target, timeout=timeout, headers={"accept-encoding": "identity"})
            response = client.send(request, stream=True)
            try:
                if response.status_code in REDIRECTS and "location" in response.headers:
                    try:
                        current = str(target.join(response.headers["location"]))
                    except (httpx.InvalidURL, TypeError, ValueError):
                        return ("fetch", None)  # a target that is not a URL at all
                    continue
                if not 200 <= response.status_code < 300:
                    return (f"status:{response.status_code}", None)
                return ("ok", _read(response, settings, deadline, sniff))
            finally:
                response.close()
        return ("fetch", None)  # too many redirects
    except _Rejected:
        return ("rejected", None)
    except _Stop as stop:
        return (stop.outcome, None)
    except (httpx.HTTPError, httpcore.ConnectError, httpcore.TimeoutException, httpcore.NetworkError, OSError):
        return ("fetch", None)
    except httpx.InvalidURL:  # httpx reads a redirect's target (to a `mailto:`, say) while sending
        return ("fetch", None)
    except httpcore.ProtocolError:
        return ("fetch", None)
    finally:
        _deadline.at = float("inf")


def fetch_many(settings: tuple[Any, ...], urls: list[str], sniff: bool = False) -> list[Outcome]:
    """Download ``urls`` (concurrently, in order of the results): ``("ok", body)`` or an outcome
    the native classes turn into an ``ImageError``."""
    config = _Settings(settings)
    transport = _PinnedTransport(config.choose, config.connect_timeout)
    with httpx.Client(transport=transport, trust_env=False, follow_redirects=False) as client:
        if len(urls) == 1:
            return [_fetch_one(client, config, urls[0], sniff)]
        with ThreadPoolExecutor(max_workers=max(1, min(int(config.concurrency), len(urls)))) as pool:
            return list(pool.map(lambda u: _fetch_one(client, config, u, sniff), urls))
