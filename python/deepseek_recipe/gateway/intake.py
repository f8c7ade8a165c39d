"""What every gateway route does with a request before its own work: authenticate it, read its
body under the size and time limits, and prepare it (parse, convert, render, encode, resolve
its images) with each failure turned into the error the gateway answers.

The API routes (``app.py``), the stored responses' routes (``stored.py``) and the page's API
(``webui.py``) all go through one :class:`Intake`, so they check the same keys, enforce the
same limits and answer the same errors.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from deepseek_recipe._native import ConversionError, ImageError, IntakeCache, IntakeTurn, json_nesting_exceeds
from deepseek_recipe._request import ProtocolRequest
from deepseek_recipe.frontend import REQUEST_CLASSES, EncodedRequest, Frontend, PreparedRequest, Protocol, Stage
from deepseek_recipe.gateway.asgi import ClientGone, Receive, Scope, header
from deepseek_recipe.gateway.errors import GatewayError, public_message
from deepseek_recipe.gateway.stored import owner_of

if TYPE_CHECKING:
    from deepseek_recipe.gateway.settings import GatewaySettings

T = TypeVar("T")

_PARSER_DEPTH = 127  # the deepest nesting the request parser (the reference's) accepts


def unauthorized() -> GatewayError:
    """The refusal of a request without a configured key (401)."""
    return GatewayError("authentication", "Invalid or missing API key")


class Intake:
    """Authentication, body reading and preparation, as ``settings`` configure them, with
    ``frontend`` preparing. Thread-safe (:meth:`prepare` runs in worker threads)."""

    def __init__(self, settings: GatewaySettings, frontend: Frontend) -> None:
        self.settings = settings
        self.frontend = frontend
        self._keys = settings.accepted_keys()
        # The last body of recent Chat and Messages conversations: the next body parses and
        # renders only what it adds (docs/gateway.md, "Incremental intake").
        self.bodies = (
            IntakeCache(settings.intake_cache_bytes, settings.max_json_depth) if settings.intake_cache_bytes else None
        )

    # -- authentication ------------------------------------------------------------------------

    def authorized(self, scope: Scope) -> bool:
        """Whether the request carries a configured key (any request does without keys)."""
        return not self._keys or self.key(scope) is not None

    def authenticate(self, scope: Scope) -> None:
        """Raise the 401 unless :meth:`authorized`."""
        if not self.authorized(scope):
            raise unauthorized()

    def key(self, scope: Scope) -> bytes | None:
        """The configured key the request carries, if any."""
        supplied = header(scope, b"x-api-key")
        authorization = header(scope, b"authorization")
        if authorization is not None and authorization[:7].lower() == b"bearer ":
            supplied = authorization[7:].strip()
        if supplied is None:
            return None
        matched: bytes | None = None
        for key in self._keys:  # every key compared, in constant time each
            if hmac.compare_digest(key, supplied):
                matched = key
        return matched

    def owner(self, scope: Scope) -> str:
        """Who owns what this request stores: its API key (one shared owner without keys)."""
        return owner_of(self.key(scope) if self._keys else None)

    # -- the body ------------------------------------------------------------------------------

    async def read_body(self, scope: Scope, receive: Receive, limit: int | None = None) -> bytes:
        """The whole body: at most ``limit`` bytes (``max_body_bytes``; 413 beyond), within
        ``body_timeout`` (408 beyond)."""
        limit = self.settings.max_body_bytes if limit is None else limit
        length = header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise GatewayError("too_large", f"Request body is larger than {limit} bytes")
        parts: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.settings.body_timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone
                part = message.get("body", b"")
                size += len(part)
                if size > limit:
                    raise GatewayError("too_large", f"Request body is larger than {limit} bytes")
                parts.append(part)
                if not message.get("more_body", False):
                    return b"".join(parts)
        raise GatewayError(
            "request_timeout", f"The request body did not arrive within {self.settings.body_timeout:g} s"
        )

    # -- preparation -----------------------------------------------------------------------------

    def prepare(self, protocol: Protocol, body: bytes) -> PreparedRequest:
        """The whole preparation in the calling thread, images included (the page's API runs it
        in its own threads; the API routes split it, see ``app.py``)."""
        encoded = self.encode(protocol, body)
        return self.checked(self.frontend.assemble, encoded, self.checked(self.frontend.resolve_images, encoded))

    def encode(self, protocol: Protocol, body: bytes, stage: Stage | None = None, owner: str = "") -> EncodedRequest:
        """Parse, convert, render and encode (no I/O), the JSON depth limit checked first;
        ``stage`` is told each step's start and end (the request's trace and histograms). A Chat
        or Messages body of ``owner`` that repeats the last body of its conversation parses and
        renders from it (the result is the same)."""
        bodies = self.bodies
        if bodies is None or protocol == "responses" or len(body) < bodies.min_body_bytes:
            self.check_depth(body)
            return self.checked(lambda: self.frontend.encode_request(protocol, body, stage=stage))
        start = time.perf_counter()
        resumed = bodies.resume(protocol, body, owner)
        request: ProtocolRequest
        turn: IntakeTurn | None
        if resumed is None:
            self.check_depth(body)
            request = self.checked(REQUEST_CLASSES[protocol], body)
            turn = bodies.start(protocol, body, owner, request)
        else:
            request, turn = resumed
        if stage is not None:
            stage("parse", start, time.perf_counter())
        previous = turn.previous if turn is not None else None
        encoded, prompt = self.checked(lambda: self.frontend.encode_parsed(protocol, request, previous, stage=stage))
        if turn is not None:
            turn.keep(prompt)
        return encoded

    def check_depth(self, body: bytes) -> None:
        """A ``max_json_depth`` below the parser's own limit, checked before parsing."""
        depth = self.settings.max_json_depth
        if depth < _PARSER_DEPTH and json_nesting_exceeds(body, depth):
            raise GatewayError("invalid_request", f"Request JSON nests deeper than {depth} levels")

    def checked(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, its failures as the gateway answers them."""
        try:
            return call(*args)
        except (ValueError, ConversionError) as error:
            raise GatewayError("invalid_request", str(error)) from None
        except ImageError as error:  # a V4.1 image could not be fetched or preprocessed
            raise GatewayError("invalid_request" if error.status_code == 400 else "internal", str(error)) from None
        except RuntimeError as error:  # the tokenizer cannot encode this prompt
            raise GatewayError("internal", public_message(str(error))) from None
