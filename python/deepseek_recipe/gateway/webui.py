"""The visualizer page inside the gateway: serving its static files and dispatching the small
JSON API behind it to the :class:`~deepseek_recipe.gateway.inspector.Inspector`.

The page (``webui/`` in the repository, ``deepseek_recipe/webui`` in the installed package) is
plain HTML, CSS and JavaScript modules; it only displays. Everything it shows comes from the
endpoints below (computed in ``inspector.py``).

=====  ============================  =====================================================
GET    ``/`` and ``/webui``          redirect to ``webui/`` (``/`` only in the standalone app)
GET    ``/webui/<file>``             the page's files (``index.html`` for ``/webui/``)
GET    ``/webui/api/info``           models, protocols, defaults
POST   ``/webui/api/render``         a request: canonical conversation, prompt, special ranges,
                                     token ids and boundaries, counts, the client's error
POST   ``/webui/api/tokenize``       text to ids (injection-safe, or with added tokens)
POST   ``/webui/api/detokenize``     ids to text and byte lengths
POST   ``/webui/api/decode``         a request and the model's output: each chunk's events,
                                     what was held back, the accumulated response
POST   ``/webui/api/compare``        one conversation in several protocols: identical ids?
POST   ``/webui/api/blocks``         two requests cut into KV blocks: how many are shared
=====  ============================  =====================================================

The API shares the gateway's API keys, body reading and errors in the OpenAI shape (its
:class:`~deepseek_recipe.gateway.intake.Intake`), with bodies up to ``webui_max_body_bytes``
and the inspector's own limits. The files need no key (they hold no data). The work runs in
worker threads, a few at a time, so a 300k-token render does not stall the gateway's streams.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Callable, Iterator
from importlib import resources
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import orjson

from deepseek_recipe.gateway.asgi import Receive, Scope, Send, header, json_content, send_bytes, send_json
from deepseek_recipe.gateway.errors import GatewayError, not_json, send_error
from deepseek_recipe.gateway.inspector import BadInput, Inspector
from deepseek_recipe.gateway.intake import Intake

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


PREFIX = "/webui"
API = "/webui/api/"
WORKERS = 4
"""API calls computed at once (each in a worker thread)."""

_CONTENT_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json", ".css": "text/css"}
_SECURITY_HEADERS = [
    # Nothing is loaded from anywhere but the page's own origin.
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class WebUI:
    """The page's routes inside a :class:`~deepseek_recipe.gateway.Gateway` (see the module doc).

    ``at_root``: ``/`` redirects to the page (the standalone app); a gateway wrapping an app of
    yours leaves ``/`` to it and serves the page at ``/webui/`` only.
    """

    def __init__(self, intake: Intake, *, at_root: bool) -> None:
        self.intake = intake
        self.at_root = at_root
        self.inspector = Inspector(intake)
        self.files = dict(_load_files(resources.files("deepseek_recipe").joinpath("webui")))
        self._limiter = anyio.CapacityLimiter(WORKERS)
        self._calls: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "render": self.inspector.render,
            "tokenize": self.inspector.tokenize,
            "detokenize": self.inspector.detokenize,
            "decode": self.inspector.decode,
            "compare": self.inspector.compare,
            "blocks": self.inspector.blocks,
        }

    def handles(self, path: str) -> bool:
        return path == PREFIX or path.startswith(PREFIX + "/") or (self.at_root and path == "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if path.startswith(API):
            await self._api(path[len(API) :], method, scope, receive, send)
        elif method not in ("GET", "HEAD"):
            error = GatewayError("method_not_allowed", f"Method {method} is not allowed here")
            await send_error(send, error, allow=b"GET, HEAD")
        elif path in ("/", PREFIX):
            await send_bytes(send, 307, b"", [(b"location", b"webui/"), (b"cache-control", b"no-cache")])
        else:
            name = path[len(PREFIX) + 1 :] or "index.html"
            found = self.files.get(name)
            if found is None:
                await send_error(send, GatewayError("not_found", "Not found"))
                return
            data, content_type, etag = found
            headers = [(b"content-type", content_type), (b"cache-control", b"no-cache"), (b"etag", etag)]
            headers += _SECURITY_HEADERS
            if header(scope, b"if-none-match") == etag:
                await send_bytes(send, 304, b"", headers)
            else:
                await send_bytes(send, 200, data, headers, head=method == "HEAD")

    async def _api(self, name: str, method: str, scope: Scope, receive: Receive, send: Send) -> None:
        intake = self.intake
        expected = "GET" if name == "info" else "POST"
        try:
            if name != "info" and name not in self._calls:
                raise GatewayError("not_found", "Not found")
            if method != expected:
                raise GatewayError("method_not_allowed", f"Method {method} is not allowed here")
            if method == "POST" and not json_content(scope):
                raise not_json()
            intake.authenticate(scope)
            if name == "info":
                answer = self.inspector.info()
            else:
                raw = await intake.read_body(scope, receive, intake.settings.webui_max_body_bytes)
                answer = await anyio.to_thread.run_sync(self._compute, name, raw, limiter=self._limiter)
        except GatewayError as error:
            await send_error(send, error, allow=expected.encode() if error.kind == "method_not_allowed" else None)
            return
        await send_json(send, 200, orjson.dumps(answer), [(b"cache-control", b"no-store")])

    def _compute(self, name: str, raw: bytes) -> dict[str, Any]:
        try:
            call = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise GatewayError("invalid_request", f"The body is not JSON: {error}") from None
        if not isinstance(call, dict):
            raise GatewayError("invalid_request", "The body must be a JSON object")
        try:
            return self._calls[name](call)
        except BadInput as error:
            raise GatewayError("invalid_request", str(error)) from None


def _load_files(root: Traversable, prefix: str = "") -> Iterator[tuple[str, tuple[bytes, bytes, bytes]]]:
    """Every file under ``root`` (hidden ones skipped): name, and its bytes, type and ETag."""
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        name = prefix + entry.name
        if entry.is_dir():
            yield from _load_files(entry, name + "/")
            continue
        data = entry.read_bytes()
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        content_type = _CONTENT_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
        if content_type.startswith("text/") or content_type == "application/json":
            content_type += "; charset=utf-8"
        etag = b'"' + hashlib.blake2b(data, digest_size=12).hexdigest().encode() + b'"'
        yield name, (data, content_type.encode(), etag)
