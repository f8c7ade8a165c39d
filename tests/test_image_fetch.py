"""The image fetcher against real HTTP servers on loopback, started here.

The default fetcher connects only to globally routable addresses, so it refuses these servers
(proved first); the other tests allow exactly the loopback addresses they use. "Forbidden"
destinations are further loopback addresses (127.0.0.3) with a server that counts what it gets,
so a leak would show as a request there, never as traffic off this machine.
"""

from __future__ import annotations

import http.server
import io
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PIL import Image

import deepseek_recipe as dr

Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


PNG = png_bytes()


class Server:
    """A threaded HTTP server on ``host`` whose routes are functions; it counts requests."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.routes: dict[str, Handler] = {}
        self.hits: list[str] = []
        self.active = 0
        self.most_active = 0
        self.lock = threading.Lock()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with outer.lock:
                    outer.hits.append(self.path)
                    outer.active += 1
                    outer.most_active = max(outer.most_active, outer.active)
                try:
                    outer.routes.get(self.path, not_found)(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with outer.lock:
                        outer.active -= 1

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that stopped reading (a refused or oversized body)

        self.httpd = S((host, 0), H)
        self.port = self.httpd.server_address[1]
        self.host = host
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send(
    h: http.server.BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    ctype: str = "image/png",
    headers: dict[str, str] | None = None,
) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


def not_found(h: http.server.BaseHTTPRequestHandler) -> None:
    send(h, 404, b"", "text/plain")


def redirect(target: str) -> Handler:
    return lambda h: send(h, 302, b"", headers={"Location": target})


def status(code: int) -> Handler:
    return lambda h: send(h, code, b"x", "text/plain")


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture
def elsewhere() -> Iterator[Server]:
    """A server on a loopback address the tests never allow."""
    s = Server("127.0.0.3")
    yield s
    s.close()


LOOPBACK = dr.ReqwestImageFetcher().with_allowed_networks(["127.0.0.1/32"])


def failure(call: Callable[[], Any]) -> dr.ImageError:
    with pytest.raises(dr.ImageError) as info:
        call()
    return info.value


def test_the_default_fetcher_refuses_loopback_without_connecting(server: Server) -> None:
    server.routes["/a.png"] = lambda h: send(h, 200, PNG)
    for url in [
        server.url("/a.png"),
        server.url("/a.png", "localhost"),
        f"http://[::ffff:127.0.0.1]:{server.port}/a.png",
    ]:
        error = failure(lambda: dr.ReqwestImageFetcher().fetch(url))
        assert (error.kind, error.is_retryable) == ("DestinationRejected", False)
        assert str(error) == f"image[0]: Failed to download image from {url}"
    assert server.hits == []
    assert LOOPBACK.fetch(server.url("/a.png")) == PNG
    assert server.hits == ["/a.png"]


def test_allowing_a_network_is_explicit_and_checked() -> None:
    with pytest.raises(ValueError, match="not an IP network"):
        dr.ReqwestImageFetcher().with_allowed_networks(["127.0.0.0/33"])
    # Refused before any connection: nothing listens on these, so only the rule can answer.
    for fetcher, url in [
        (LOOPBACK, "http://127.0.0.2:9/x.png"),
        (dr.ReqwestImageFetcher(), "http://127.0.0.1:9/x.png"),
    ]:
        assert failure(lambda: fetcher.fetch(url)).kind == "DestinationRejected", url
    assert failure(lambda: LOOPBACK.fetch("http://127.0.0.1:9/x.png")).kind == "Fetch"  # allowed: a refused connect


def test_a_redirect_to_a_forbidden_address_is_refused_before_connecting(server: Server, elsewhere: Server) -> None:
    elsewhere.routes["/secret"] = lambda h: send(h, 200, PNG)
    targets = [
        elsewhere.url("/secret"),
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/x",
        "http://[::1]:9/x",
        "http://[fd00:ec2::254]/x",
    ]
    for i, target in enumerate(targets):
        server.routes[f"/r{i}"] = redirect(target)
        error = failure(lambda: LOOPBACK.fetch(server.url(f"/r{i}")))
        assert error.kind == "DestinationRejected", target
    assert elsewhere.hits == []
    # The same redirect is followed once its destination is allowed.
    both = dr.ReqwestImageFetcher().with_allowed_networks(["127.0.0.1", "127.0.0.3"])
    assert both.fetch(server.url("/r0")) == PNG
    assert elsewhere.hits == ["/secret"]


def test_dns_is_resolved_once_and_the_connection_uses_the_checked_address(server: Server, elsewhere: Server) -> None:
    server.routes["/a.png"] = lambda h: send(h, 200, PNG)
    elsewhere.routes["/a.png"] = lambda h: send(h, 200, b"GIF89a-the-wrong-host")
    calls: list[tuple[str, int]] = []

    def rebinding(answers: list[str]) -> Callable[[str, int], list[str]]:
        def resolve(host: str, port: int) -> list[str]:
            calls.append((host, port))
            return [answers[min(len(calls) - 1, len(answers) - 1)]]

        return resolve

    # Allowed first answer, forbidden second: the download uses the first (checked) one.
    fetcher = LOOPBACK.with_resolver(rebinding(["127.0.0.1", "127.0.0.3"]))
    assert fetcher.fetch(f"http://images.test:{server.port}/a.png") == PNG
    assert calls == [("images.test", server.port)]
    # Forbidden first answer, allowed later: refused, and nothing reaches either server.
    calls.clear()
    elsewhere_port = (
        dr.ReqwestImageFetcher()
        .with_allowed_networks(["127.0.0.1"])
        .with_resolver(rebinding(["127.0.0.3", "127.0.0.1"]))
    )
    error = failure(lambda: elsewhere_port.fetch(f"http://images.test:{elsewhere.port}/a.png"))
    assert error.kind == "DestinationRejected"
    assert calls == [("images.test", elsewhere.port)]
    assert elsewhere.hits == []
    # A host with several answers: the first allowed one is used.
    several = LOOPBACK.with_resolver(lambda host, port: ["10.0.0.1", "169.254.169.254", "127.0.0.1"])
    assert several.fetch(f"http://images.test:{server.port}/a.png") == PNG


def test_destination_filter_keeps_the_reference_contract(server: Server, elsewhere: Server) -> None:
    server.routes["/a.png"] = lambda h: send(h, 200, PNG)
    server.routes["/hop"] = lambda h: send(h, 302, b"", headers={"Location": "/a.png"})
    seen: list[tuple[str, str]] = []

    def allow(host: str, address: str) -> bool:
        seen.append((host, address))
        return True

    # The filter replaces the default rule: it may allow loopback.
    assert dr.ReqwestImageFetcher().with_destination_filter(allow).fetch(server.url("/hop")) == PNG
    assert seen and all(s == ("127.0.0.1", "127.0.0.1") for s in seen)
    for verdict in [False, 1, "yes", None]:
        rejecting = dr.ReqwestImageFetcher().with_destination_filter(lambda h, a, v=verdict: v)  # type: ignore[misc]
        assert failure(lambda: rejecting.fetch(server.url("/a.png"))).kind == "DestinationRejected"

    def boom(host: str, address: str) -> bool:
        raise RuntimeError("no")

    assert failure(lambda: dr.ReqwestImageFetcher().with_destination_filter(boom).fetch(server.url("/a.png"))).kind == (
        "DestinationRejected"
    )
    with pytest.raises(TypeError, match="destination_filter must be callable"):
        dr.ReqwestImageFetcher().with_destination_filter(1)  # type: ignore[arg-type]
    # It keeps the fetcher's size limit.
    limited = dr.ReqwestImageFetcher.with_max_bytes(10).with_destination_filter(allow)
    assert failure(lambda: limited.fetch(server.url("/a.png"))).kind == "ImageTooLarge"


def test_only_http_and_https_are_fetched(server: Server) -> None:
    for url in ["ftp://127.0.0.1/a.png", "file:///etc/passwd", "gopher://127.0.0.1:70/", "not a url", "", "http:///a"]:
        error = failure(lambda: LOOPBACK.fetch(url))
        assert (error.kind, error.is_retryable) == ("Fetch", True), url
    assert server.hits == []


def test_redirect_hops_are_limited(server: Server) -> None:
    for n in range(12):
        server.routes[f"/chain{n}"] = (lambda h: send(h, 200, PNG)) if n == 0 else redirect(f"/chain{n - 1}")
    # Five redirects are followed, the sixth is refused (the wheel's limit).
    assert LOOPBACK.fetch(server.url("/chain5")) == PNG
    assert failure(lambda: LOOPBACK.fetch(server.url("/chain6"))).kind == "Fetch"
    server.routes["/loop"] = lambda h: send(h, 302, b"", headers={"Location": "/loop"})
    assert failure(lambda: LOOPBACK.fetch(server.url("/loop"))).kind == "Fetch"


def test_status_codes(server: Server) -> None:
    for code, retryable in [(404, False), (403, False), (429, False), (500, True), (503, True), (301, False)]:
        server.routes[f"/s{code}"] = status(code)
        error = failure(lambda: LOOPBACK.fetch(server.url(f"/s{code}")))
        assert (error.kind, error.is_retryable) == ("FetchStatus", retryable), code
    server.routes["/empty"] = lambda h: send(h, 204, b"")
    assert LOOPBACK.fetch(server.url("/empty")) == b""


def test_oversized_bodies_stop_while_streaming(server: Server) -> None:
    big = PNG + b"\0" * (2 << 20)

    def chunked(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for i in range(0, len(big), 65536):
            piece = big[i : i + 65536]
            h.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
        h.wfile.write(b"0\r\n\r\n")

    server.routes["/declared"] = lambda h: send(h, 200, big)
    server.routes["/chunked"] = chunked
    fetcher = LOOPBACK.with_max_bytes(1 << 20).with_allowed_networks(["127.0.0.1"])
    for path in ["/declared", "/chunked"]:
        error = failure(lambda: fetcher.fetch(server.url(path)))
        assert (error.kind, str(error)) == ("ImageTooLarge", "image[0]: image file size exceeds limit 1 MB")
    # In a resolve call the reference reports the same as a (retryable) download failure.
    resolver = dr.ImageResolver(fetcher, dr.OpenCvImagePreprocessor())
    error = failure(lambda: resolver.resolve([dr.UrlImageSource(server.url("/chunked"), path="m")], dr.ImageQuota()))
    assert (error.kind, error.is_retryable) == ("Fetch", True)


def test_slow_bodies_hit_the_total_timeout(server: Server) -> None:
    def drip(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(PNG)))
        h.end_headers()
        for byte in PNG:
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
            time.sleep(0.1)

    def hang(h: http.server.BaseHTTPRequestHandler) -> None:
        time.sleep(3)

    server.routes["/drip"] = drip
    server.routes["/hang"] = hang
    fetcher = LOOPBACK.with_timeouts(connect=1.0, total=0.5)
    for path in ["/drip", "/hang"]:
        error = failure(lambda: fetcher.fetch(server.url(path)))
        assert (error.kind, error.is_retryable) == ("Fetch", True), path


def test_the_total_timeout_bounds_a_body_that_keeps_dripping(server: Server) -> None:
    """A server sending a byte every 50 ms (for half a minute) cannot stretch a download past
    its total timeout: each read waits at most until the deadline."""

    def drip(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(1 << 20))
        h.end_headers()
        deadline = time.monotonic() + 30
        data = PNG + b"\0" * (1 << 20)
        for i in range(1 << 20):
            if time.monotonic() > deadline:
                return
            h.wfile.write(data[i : i + 1])
            h.wfile.flush()
            time.sleep(0.05)

    server.routes["/drip"] = drip
    total = 0.5
    fetcher = LOOPBACK.with_timeouts(connect=1.0, total=total)
    resolver = dr.ImageResolver(fetcher, dr.OpenCvImagePreprocessor())
    for call in [
        lambda: fetcher.fetch(server.url("/drip")),
        lambda: resolver.resolve([dr.UrlImageSource(server.url("/drip"))], dr.ImageQuota()),
    ]:
        start = time.monotonic()
        error = failure(call)
        assert (error.kind, error.is_retryable) == ("Fetch", True)
        assert time.monotonic() - start < 20 * total


def test_the_bytes_decide_the_type_not_the_header(server: Server) -> None:
    html = b"<html>" + b"x" * (1 << 20)
    server.routes["/png-as-text"] = lambda h: send(h, 200, PNG, "text/plain")
    server.routes["/html"] = lambda h: send(h, 200, html, "text/html")
    server.routes["/html-as-png"] = lambda h: send(h, 200, html, "image/png")
    # A standalone fetch returns whatever the server sent (as the reference's does).
    assert LOOPBACK.fetch(server.url("/png-as-text")) == PNG
    resolver = dr.ImageResolver(LOOPBACK, dr.OpenCvImagePreprocessor())
    ok = resolver.resolve([dr.UrlImageSource(server.url("/png-as-text"))], dr.ImageQuota())
    assert [(i.width, i.height) for i in ok.images] == [(630, 476)]
    for path in ["/html", "/html-as-png"]:
        quota = dr.ImageQuota()
        error = failure(lambda: resolver.resolve([dr.UrlImageSource(server.url(path), path="m")], quota))
        assert (error.kind, str(error).split(":")[0]) == ("UnsupportedMediaType", "m.image[0]")
        assert quota.image_count() == 0


def test_the_images_of_one_call_download_concurrently(server: Server) -> None:
    def slow_png(h: http.server.BaseHTTPRequestHandler) -> None:
        time.sleep(0.3)
        send(h, 200, PNG)

    for i in range(6):
        server.routes[f"/{i}.png"] = slow_png
    resolver = dr.ImageResolver(LOOPBACK.with_concurrency(3), dr.OpenCvImagePreprocessor())
    sources = [dr.UrlImageSource(server.url(f"/{i}.png")) for i in range(6)]
    quota = dr.ImageQuota()
    assert len(resolver.resolve(sources, quota).images) == 6
    assert server.most_active == 3
    assert (quota.image_count(), quota.byte_size()) == (6, 6 * len(PNG))
