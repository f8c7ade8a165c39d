"""Stored Responses and conversations: the state a Responses client keeps in the gateway.

A response made with ``store`` (the default, as in the official API) is kept with its
request and the ids of its prompt; a later request naming it as ``previous_response_id``
(or naming a ``conversation``) sends only its new input. The stored items come first, then
the request's own, under the request's own ``instructions`` (never the stored ones), which
is exactly what the same conversation sent whole converts to.

The database is the durable copy. Each process keeps the state of recent turns in memory
(:class:`HotStates`, least recently used out within a byte budget): the conversion state
after the stored items (``ResponsesHistory``) and the last turn's rendered prompt and ids
(``EncodedPrompt``), so the next turn converts, renders and encodes only what it adds, and
writes only its own request, response and new ids. A turn this process has not seen (another
process made it, or the process restarted) is read back from the database once.

Routes: ``GET``/``DELETE /v1/responses/{id}``, ``GET /v1/responses/{id}/input_items``,
``POST /v1/responses/{id}/cancel`` and a background response's events streamed again
(``background.py``), and the Conversations API (``/v1/conversations…``). Every object belongs to the API key that made
it; another key gets 404.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import secrets
import time
import urllib.parse
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import orjson

from deepseek_recipe._native import (
    ConversionError,
    EncodedPrompt,
    ResponsesHistory,
    ResponsesRequest,
    TokenIds,
)
from deepseek_recipe.frontend import EncodedRequest, Frontend
from deepseek_recipe.gateway.asgi import Receive, Scope, Send, send_json
from deepseek_recipe.gateway.background import FINISHED, HEARTBEAT, STALE_AFTER, Run, Runs
from deepseek_recipe.gateway.errors import GatewayError
from deepseek_recipe.gateway.settings import GatewaySettings
from deepseek_recipe.gateway.store import (
    ConversationRecord,
    ItemRecord,
    ResponseRecord,
    RunRecord,
    Store,
    StoreNotFound,
    StoreUnavailable,
    TurnWrite,
    open_store,
)

logger = logging.getLogger("deepseek_recipe.gateway")

#: Prompt ids are stored as links to the prompt they extend; a chain this long is cut (the
#: prompt stored whole), so reading one back stays cheap.
MAX_PROMPT_DEPTH = 32
#: A response's output items up to this size are converted on the event loop when stored.
INLINE_OUTPUT_BYTES = 64 * 1024
#: Items the Conversations API takes in one request (the official limit).
MAX_ITEMS_PER_REQUEST = 20
#: A background response ending so is written to the store (else only its run knows it).
_STORED_STATUSES = frozenset({"completed", "incomplete"})
#: A ``starting_after`` query value: an event's sequence number (or -1, before the first).
_SEQUENCE_NUMBER = re.compile(r"-?[0-9]{1,18}")


def owner_of(key: bytes | None) -> str:
    """The owner of what a key creates: a hash of the key (never the key); ``""`` when the
    gateway takes no keys."""
    return "" if key is None else hashlib.sha256(b"deepseek-recipe:" + key).hexdigest()[:32]


def _unavailable(error: StoreUnavailable) -> GatewayError:
    return GatewayError("store_unavailable", str(error))


def _not_found(what: str, ident: str) -> GatewayError:
    return GatewayError("not_found", f"{what} with id '{ident[:64]}' not found.")


def _standing(record: ResponseRecord | None, response_id: str) -> ResponseRecord:
    """The previous response's record, read from the store: 404 when it is gone."""
    if record is None or record.deleted:
        raise _not_found("Previous response", response_id)
    return record


async def _standing_read(read: asyncio.Future[ResponseRecord | None], response_id: str) -> str:
    """The thread of the previous response ``read`` reads, once it answers: 503 when the store
    is unreachable, 404 when the response is gone."""
    try:
        return _standing(await read, response_id).thread_id
    except StoreUnavailable as error:
        raise _unavailable(error) from None


@dataclass(frozen=True)
class TurnState:
    """What continuing a stored turn needs: the items so far, converted, and the prompt's ids
    (as the last turn's encoded prompt, or as ids read back from storage)."""

    history: ResponsesHistory
    encoded: EncodedPrompt | None
    stored_ids: bytes | None
    #: The response whose prompt these ids are (the base of the next turn's ids).
    prompt_response: str | None
    prompt_depth: int
    #: Conversation mode: the conversation's version this state is of.
    version: int | None = None
    #: The API key's owner the state was made for.
    owner: str = ""

    @property
    def size(self) -> int:
        encoded = self.encoded.approx_bytes if self.encoded is not None else 0
        return self.history.approx_bytes + encoded + len(self.stored_ids or b"") + 256

    def base_ids(self) -> TokenIds | None:
        if self.encoded is not None:
            return self.encoded.ids
        if self.stored_ids:
            return TokenIds.from_bytes(self.stored_ids)
        return None


class HotStates:
    """Recent turns' states, least recently used out beyond ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._states: OrderedDict[str, TurnState] = OrderedDict()
        self._bytes = 0

    def get(self, key: str) -> TurnState | None:
        state = self._states.get(key)
        if state is not None:
            self._states.move_to_end(key)
        return state

    def put(self, key: str, state: TurnState) -> None:
        self.drop(key)
        if state.size > self.budget:
            return
        self._states[key] = state
        self._bytes += state.size
        while self._bytes > self.budget and self._states:
            _, old = self._states.popitem(last=False)
            self._bytes -= old.size

    def drop(self, key: str) -> None:
        old = self._states.pop(key, None)
        if old is not None:
            self._bytes -= old.size

    def __len__(self) -> int:
        return len(self._states)


@dataclass
class Turn:
    """One stored Responses request on its way: what to write once its output is complete."""

    owner: str
    body: bytes
    model: str
    store: bool
    previous_id: str | None
    conversation_id: str | None
    thread_id: str | None
    history: ResponsesHistory
    encoded: EncodedPrompt
    base: TurnState | None
    input_items: list[Any] | None = None
    #: Made with ``background: true`` (``background.py``).
    background: bool = False


class StoredResponses:
    """The gateway's stored Responses and conversations (see the module doc)."""

    def __init__(self, settings: GatewaySettings, frontend: Frontend, store: Store | None = None) -> None:
        self.settings = settings
        self.frontend = frontend
        self.store = (
            store
            if store is not None
            else open_store(settings.store, settings.store_dir, pool_size=settings.store_pool_size)
        )
        self.hot = HotStates(settings.store_cache_bytes)
        #: This process's background responses (``background.py``).
        self.runs = Runs(settings.background_retention, settings.background_bytes)
        self._writes: set[asyncio.Task[None]] = set()
        self._opened = False
        self._lock = anyio.Lock()

    @property
    def enabled(self) -> bool:
        return self.store is not None

    async def open(self) -> None:
        if self.store is None or self._opened:
            return
        async with self._lock:
            if not self._opened:
                await self.store.open()
                self._opened = True

    async def _store(self) -> Store:
        if self.store is None:
            raise GatewayError("not_found", "This gateway stores no responses")
        if not self._opened:
            try:
                await self.open()
            except StoreUnavailable as error:
                raise _unavailable(error) from None
        return self.store

    async def close(self) -> None:
        """Close the store, once the writes of background runs' last states are done (for a
        few seconds at most)."""
        if self._writes:
            await asyncio.wait(self._writes, timeout=5)
        if self.store is not None and self._opened:
            await self.store.close()
            self._opened = False

    def _expires(self, now: int) -> int | None:
        days = self.settings.store_retention_days
        return None if days <= 0 else now + int(days * 86400)

    # -- retention ---------------------------------------------------------------------------

    async def cleanup_forever(self) -> None:
        """Delete expired threads in small batches, one short transaction each, forever."""
        while True:
            await anyio.sleep(self.settings.store_cleanup_interval)
            try:
                store = await self._store()
                while await store.cleanup(int(time.time()), 100) >= 100:
                    await anyio.sleep(0)
            except (StoreUnavailable, GatewayError) as error:
                logger.warning("store cleanup failed: %s", error)

    # -- background responses ----------------------------------------------------------------

    async def start_run(self, run: Run) -> None:
        """Keep a new background run (written to the store first: a 503 if it cannot be, and
        nothing runs); the store's copy then follows its status, so any process answers for it."""
        store = await self._store()
        try:
            await store.put_run(self._run_record(run))
        except StoreUnavailable as error:
            raise _unavailable(error) from None
        run.on_change = self._run_changed
        self.runs.add(run)

    def _run_record(self, run: Run) -> RunRecord:
        now = int(time.time())
        keep = int(self.settings.background_retention) + 1
        if run.status not in FINISHED:
            keep += int(self.settings.total_timeout)
        return RunRecord(run.id, run.owner, run.snapshot(), now, now + keep)

    def _run_changed(self, run: Run) -> None:
        task = asyncio.get_running_loop().create_task(self._write_run(run))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write_run(self, run: Run) -> None:
        """The store's copy of ``run`` as it stands now (one write at a time per run, so the
        last one is of its last state). A completed or incomplete run's response is a stored
        turn by then: its copy goes."""
        async with run.writing:
            try:
                store = await self._store()
                if run.status in _STORED_STATUSES:
                    await store.delete_run(run.owner, run.id)
                else:
                    await store.put_run(self._run_record(run))
            except (StoreUnavailable, GatewayError) as error:
                logger.warning("background response %s: its state could not be stored: %s", run.id, error)

    async def watch_runs(self) -> None:
        """For the server's life: every :data:`HEARTBEAT` seconds, tell the store this
        process's background runs still run, and cancel those another process asked to."""
        while True:
            await anyio.sleep(HEARTBEAT)
            running = self.runs.running()
            if not running or self.store is None:
                continue
            try:
                asked = await self.store.beat([run.id for run in running], int(time.time()))
            except StoreUnavailable as error:
                logger.warning("background responses: no heartbeat: %s", error)
                continue
            for run in running:
                if run.id in asked:
                    run.cancel()

    async def _find(
        self, store: Store, owner: str, response_id: str, now: int
    ) -> tuple[bytes | None, dict[str, Any] | None]:
        """The response as a stored turn (its JSON), and as another process's background run
        (:meth:`_stored_run`). The run's copy is read first: it goes only once the turn is
        stored, so a response that completes between the two reads is seen in one or the other."""
        elsewhere = await self._stored_run(store, owner, response_id, now)
        record = await store.get_response(owner, response_id, now)
        return (record.response if record is not None and not record.deleted else None), elsewhere

    async def _local_run(self, store: Store, owner: str, response_id: str, now: int) -> Run | None:
        """The background run of ``response_id`` this process keeps, if ``owner`` made it. One
        that is over is checked against the store first: deleted through another process, it
        is forgotten here too (its memory would answer for it until its retention ends)."""
        run = self.runs.get(response_id, owner)
        if run is None or not run.finished:
            return run
        if run.status in _STORED_STATUSES:
            record = await store.get_response(owner, response_id, now)
            kept = record is not None and not record.deleted
        else:
            kept = await store.get_run(owner, response_id, now) is not None
        if not kept:
            self.runs.drop(response_id)
            return None
        return run

    async def _stored_run(self, store: Store, owner: str, response_id: str, now: int) -> dict[str, Any] | None:
        """A background response another process runs (or ran, and it failed or was
        cancelled), as the store has it; one whose process stopped beating is failed."""
        record = await store.get_run(owner, response_id, now)
        if record is None:
            return None
        response: dict[str, Any] = orjson.loads(record.response)
        if response.get("status") not in FINISHED and now - record.heartbeat > STALE_AFTER:
            error = {"code": "server_error", "message": "The gateway process running the response stopped"}
            response = {**response, "status": "failed", "error": error}
        return response

    # -- a Responses request -----------------------------------------------------------------

    def refuse_state(self, body: bytes) -> None:
        """A Responses request to a gateway that stores nothing: a 400 if it names a response
        or a conversation to continue, or asks to run in the background (each needs a store).
        Parsed only when the body holds one of those names."""
        if not any(name in body for name in (b'"previous_response_id"', b'"conversation"', b'"background"')):
            return
        try:
            fields = ResponsesRequest(body).state_fields()
        except (ValueError, ConversionError):
            return  # not a valid request: its own error comes from the encoding
        if fields.previous_response_id is not None or fields.conversation is not None or fields.background:
            raise GatewayError("invalid_request", "This gateway stores no responses")

    async def prepare(self, owner: str, body: bytes, run: Any) -> tuple[EncodedRequest, Turn | None]:
        """Encode a ``POST /v1/responses`` body (its images not resolved yet). ``await run(fn)``
        runs ``fn`` as the gateway runs encoding: on the loop or in a worker thread by size,
        failures mapped to the errors clients get (bad bodies become 400s). Returns the
        encoded request and, when the response is to be stored, the turn to commit after its
        output."""
        request: ResponsesRequest = await run(lambda: ResponsesRequest(body))
        try:
            fields = request.state_fields()
        except ConversionError as error:
            raise GatewayError("invalid_request", str(error)) from None
        store_it = fields.store if fields.store is not None else True
        background = bool(fields.background)
        if background and not store_it:
            raise GatewayError(
                "invalid_request", "Invalid 'background': a background response must be stored (store: true)."
            )
        if self.store is None:
            if fields.previous_response_id is not None or fields.conversation is not None or background:
                raise GatewayError("invalid_request", "This gateway stores no responses")
            return await run(lambda: self.frontend.encode_request("responses", body)), None
        if len(body) > self.settings.store_max_object_bytes and store_it:
            raise GatewayError(
                "too_large",
                f"Request body is larger than {self.settings.store_max_object_bytes} bytes, the most a stored "
                "response may hold; send it with store: false",
            )
        store = await self._store()
        now = int(time.time())
        stored_state = (store_it, fields.previous_response_id, fields.conversation, fields.metadata, background)

        def encode(state: TurnState | None) -> tuple[EncodedRequest, ResponsesHistory, EncodedPrompt]:
            return self.frontend.encode_continuing(
                request,
                state.history if state is not None else ResponsesHistory(),
                previous=state.encoded if state is not None else None,
                stored_ids=state.stored_ids if state is not None and state.encoded is None else None,
                stored_state=stored_state,
            )

        state: TurnState | None = None
        thread_id: str | None = None
        previous_id = fields.previous_response_id
        hot = self.hot.get(previous_id) if previous_id is not None else None
        if previous_id is not None and hot is not None and hot.owner == owner:
            # The previous turn's state is in memory: the store is asked whether that response
            # still stands while the turn is encoded, and answers first as it would if asked
            # before (a 503 or 404 before any error of the new input).
            state = hot
            check = asyncio.ensure_future(store.get_response(owner, previous_id, now))
            check.add_done_callback(lambda done: done.cancelled() or done.exception())
            await asyncio.sleep(0)  # the read is on its way before a short body is encoded on the loop
            try:
                request_encoded, after, encoded = await run(lambda: encode(hot))
            except GatewayError:
                await _standing_read(check, previous_id)
                raise
            except BaseException:
                check.cancel()
                raise
            thread_id = await _standing_read(check, previous_id)
        else:
            try:
                if previous_id is not None:
                    state, thread_id = await self._response_state(store, owner, previous_id, now)
                elif fields.conversation is not None:
                    state = await self._conversation_state(store, owner, fields.conversation, now)
                    thread_id = fields.conversation
            except StoreUnavailable as error:
                raise _unavailable(error) from None
            request_encoded, after, encoded = await run(lambda: encode(state))
        if not store_it:
            return request_encoded, None
        turn = Turn(
            owner=owner,
            body=body,
            model=request_encoded.model,
            store=store_it,
            previous_id=fields.previous_response_id,
            conversation_id=fields.conversation,
            thread_id=thread_id,
            history=after,
            encoded=encoded,
            base=state,
            background=background,
        )
        return request_encoded, turn

    async def _response_state(self, store: Store, owner: str, response_id: str, now: int) -> tuple[TurnState, str]:
        record = _standing(await store.get_response(owner, response_id, now), response_id)
        state = self.hot.get(response_id)
        if state is None:
            state = await self._load_response_state(store, owner, record, now)
            self.hot.put(response_id, state)
        return state, record.thread_id

    async def _load_response_state(self, store: Store, owner: str, record: ResponseRecord, now: int) -> TurnState:
        chain = await store.response_chain(owner, record.id, now)
        items: list[Any] = []
        first = chain[0] if chain else record
        if first.conversation_id is not None and first.context_seq is not None:
            context = await store.list_items(owner, first.conversation_id, now, below_seq=first.context_seq)
            if context is None:
                raise _not_found("Conversation", first.conversation_id)
            items += [orjson.loads(item.item) for item in context]
        for link in chain:
            items += request_items(link.request, link.id)
            items += orjson.loads(link.response).get("output", [])
        history = await anyio.to_thread.run_sync(ResponsesHistory.from_json, orjson.dumps(items))
        ids = await self._stored_prompt(store, owner, record.id)
        return TurnState(history, None, ids, record.id, record.prompt_depth, owner=owner)

    async def _stored_prompt(self, store: Store, owner: str, response_id: str) -> bytes:
        ids = b""
        for keep, tail in await store.prompt_chain(owner, response_id):
            ids = ids[: 4 * keep] + tail
        return ids

    async def _conversation_state(self, store: Store, owner: str, conversation_id: str, now: int) -> TurnState:
        conversation = await store.get_conversation(owner, conversation_id, now)
        if conversation is None:
            raise _not_found("Conversation", conversation_id)
        key = "conversation:" + conversation_id
        state = self.hot.get(key)
        if state is not None and state.version == conversation.version:
            return state
        items = await store.list_items(owner, conversation_id, now)
        if items is None:
            raise _not_found("Conversation", conversation_id)
        joined = b"[" + b",".join(item.item for item in items) + b"]"
        history = await anyio.to_thread.run_sync(ResponsesHistory.from_json, joined)
        base = conversation.last_response_id
        ids = await self._stored_prompt(store, owner, base) if base is not None else None
        depth = 0
        if base is not None:
            record = await store.get_response(owner, base, now)
            depth = record.prompt_depth if record is not None else MAX_PROMPT_DEPTH
        state = TurnState(history, None, ids or None, base, depth, conversation.version, owner=owner)
        self.hot.put(key, state)
        return state

    async def commit(self, turn: Turn, response_json: str) -> None:
        """Store a completed turn (before its last bytes reach the client): its request, its
        response and its prompt's new ids, in one transaction; then keep its state hot."""
        value = orjson.loads(response_json)
        response = value.get("response", value)  # a streamed turn's final event holds it
        response_json = orjson.dumps(response).decode()
        response_id = response["id"]
        output = response.get("output", [])
        now = int(time.time())
        output_json = orjson.dumps(output)
        if len(turn.body) + len(response_json) > self.settings.store_max_object_bytes:
            raise GatewayError(
                "too_large",
                f"The response is larger than {self.settings.store_max_object_bytes} bytes, the most a stored "
                "response may hold",
            )
        ids = turn.encoded.ids
        base = turn.base
        base_ids = base.base_ids() if base is not None else None
        keep = ids.common_prefix(base_ids) if base_ids is not None else 0
        depth = base.prompt_depth + 1 if base is not None and base.prompt_response is not None else 0
        prompt_base = base.prompt_response if base is not None else None
        if prompt_base is None or depth > MAX_PROMPT_DEPTH or keep == 0:
            prompt_base, keep, depth = None, 0, 0
        # Only the response's own items are converted (the state after the stored ones is
        # kept): a usual response converts here rather than pay a thread hop.
        if len(output_json) <= INLINE_OUTPUT_BYTES:
            history = turn.history.extend(output_json)
        else:
            history = await anyio.to_thread.run_sync(turn.history.extend, output_json)
        conversation_items: list[tuple[str, bytes]] = []
        if turn.conversation_id is not None:
            for _index, item in enumerate(request_items(turn.body, response_id)):
                conversation_items.append((item["id"], orjson.dumps(item)))
            for item in output:
                conversation_items.append(
                    (str(item.get("id") or _item_id("item", response_id, len(conversation_items))), orjson.dumps(item))
                )
        record = ResponseRecord(
            id=response_id,
            owner=turn.owner,
            thread_id=turn.thread_id or response_id,
            created_at=int(response.get("created_at") or now),
            model=turn.model,
            request=turn.body,
            response=response_json.encode(),
            previous_id=turn.previous_id,
            conversation_id=turn.conversation_id,
            prompt_base=prompt_base,
            prompt_keep=keep,
            prompt_tail=ids.to_bytes(keep),
            prompt_depth=depth,
        )
        store = await self._store()
        try:
            await store.save_turn(TurnWrite(record, self._expires(now), conversation_items))
        except StoreUnavailable as error:
            raise _unavailable(error) from None
        except StoreNotFound:
            raise _not_found("Conversation", turn.conversation_id or "") from None
        state = TurnState(history, turn.encoded, None, response_id, depth, owner=turn.owner)
        self.hot.put(response_id, state)
        if turn.conversation_id is not None:
            conversation = await store.get_conversation(turn.owner, turn.conversation_id, now)
            if conversation is not None:
                self.hot.put(
                    "conversation:" + turn.conversation_id,
                    TurnState(history, turn.encoded, None, response_id, depth, conversation.version, owner=turn.owner),
                )

    # -- routes --------------------------------------------------------------------------------

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith(("/v1/responses/", "/v1/conversations/")) or path == "/v1/conversations"

    @staticmethod
    def takes_json(path: str) -> bool:
        """Whether a POST to ``path`` sends a JSON body (a cancel sends none: ``curl -X POST``
        without a body and content type is answered, where a JSON route would give 415)."""
        return not (path.startswith("/v1/responses/") and path.endswith("/cancel"))

    async def serve(self, scope: Scope, receive: Receive, send: Send, owner: str, read_body: Any) -> None:
        """Answer one of the routes (the caller authenticated the request)."""
        parts = scope["path"].split("/")[2:]
        method = scope["method"]
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        store = await self._store()
        now = int(time.time())
        try:
            if parts[0] == "responses" and len(parts) == 2 and method == "GET" and _flag(query, "stream"):
                await self._stream_again(store, owner, parts[1], query, receive, send, now)
                return
            if parts[0] == "responses":
                body = await self._responses_route(store, owner, parts[1:], method, query, now)
            else:
                payload = await read_body() if method == "POST" else b""
                body = await self._conversations_route(store, owner, parts[1:], method, query, payload, now)
        except StoreUnavailable as error:
            raise _unavailable(error) from None
        await send_json(send, 200, body)

    async def _responses_route(
        self, store: Store, owner: str, parts: list[str], method: str, query: dict[str, list[str]], now: int
    ) -> bytes:
        run = await self._local_run(store, owner, parts[0], now) if parts else None
        if len(parts) == 1 and method == "GET":
            if run is not None and run.status not in _STORED_STATUSES:  # not a stored turn
                return run.snapshot()
            turn, elsewhere = await self._find(store, owner, parts[0], now)
            if turn is not None:
                return turn
            if elsewhere is None:
                raise _not_found("Response", parts[0])
            return orjson.dumps(elsewhere)
        if len(parts) == 1 and method == "DELETE":
            deleted = orjson.dumps({"id": parts[0], "object": "response", "deleted": True})
            elsewhere = await self._stored_run(store, owner, parts[0], now) if run is None else None
            status = run.status if run is not None else elsewhere.get("status") if elsewhere is not None else None
            if status is not None and status not in FINISHED:
                raise GatewayError("invalid_request", "The response is still running; cancel it first.")
            if run is not None:
                self.runs.drop(parts[0])
            if status is not None and status not in _STORED_STATUSES:  # failed or cancelled: not a turn
                await store.delete_run(owner, parts[0])
                return deleted
            if not await store.delete_response(owner, parts[0], now):
                raise _not_found("Response", parts[0])
            self.hot.drop(parts[0])
            return deleted
        if len(parts) == 2 and parts[1] == "cancel" and method == "POST":
            return await self._cancel(store, owner, parts[0], run, now)
        if len(parts) == 2 and parts[1] == "input_items" and method == "GET":
            record = await store.get_response(owner, parts[0], now)
            if record is None or record.deleted:
                raise _not_found("Response", parts[0])
            items = await self._input_items(store, owner, record, now)
            return page(items, query, default_order="desc")
        raise GatewayError("not_found", "Not found")

    async def _cancel(self, store: Store, owner: str, response_id: str, run: Run | None, now: int) -> bytes:
        """``POST /v1/responses/{id}/cancel``: a running background response is cancelled; a
        cancelled one is answered again; anything else is a 400 (an unknown id a 404)."""
        if run is not None:
            if run.status in FINISHED and run.status != "cancelled":
                raise GatewayError("invalid_request", f"Cannot cancel a response that is already {run.status}.")
            run.cancel()
            return run.snapshot()
        turn, elsewhere = await self._find(store, owner, response_id, now)
        if turn is not None:
            response = orjson.loads(turn)
        else:
            if elsewhere is None:
                raise _not_found("Response", response_id)
            response = elsewhere
            if response.get("status") not in FINISHED:  # its process cancels it at its next heartbeat
                await store.request_cancel(owner, response_id, now)
                return orjson.dumps({**response, "status": "cancelled"})
            if response.get("status") == "cancelled":
                return orjson.dumps(response)
        if response.get("background"):
            raise GatewayError("invalid_request", f"Cannot cancel a response that is already {response.get('status')}.")
        raise GatewayError("invalid_request", "Only a response made with background: true can be cancelled.")

    async def _stream_again(
        self,
        store: Store,
        owner: str,
        response_id: str,
        query: dict[str, list[str]],
        receive: Receive,
        send: Send,
        now: int,
    ) -> None:
        """``GET /v1/responses/{id}?stream=true[&starting_after=N]``: a background response made
        with ``stream: true``, its events after sequence number ``N`` (all without it), then
        the new ones as they come."""
        raw = (query.get("starting_after") or ["-1"])[0]
        if _SEQUENCE_NUMBER.fullmatch(raw) is None:  # (int() would take " 3", "3_0" or "٣")
            raise GatewayError("invalid_request", "Invalid 'starting_after': expected an integer.")
        after = int(raw)
        run = await self._local_run(store, owner, response_id, now)
        if run is None and await self._find(store, owner, response_id, now) == (None, None):
            raise _not_found("Response", response_id)
        if run is not None and run.events_lost:
            raise GatewayError(
                "invalid_request",
                f"The events of this response were not kept (over background_bytes, {self.settings.background_bytes} "
                "bytes in this process); poll it instead.",
            )
        if run is None or not run.stream:
            raise GatewayError(
                "invalid_request",
                "Only a background response made with stream: true can be streamed again, from the gateway "
                f"process that runs it (its events are kept {self.settings.background_retention:g} s after it ends).",
            )
        await run.follow(send, receive, after, self.settings.keepalive_interval, [])

    async def _input_items(self, store: Store, owner: str, record: ResponseRecord, now: int) -> list[Any]:
        chain = await store.response_chain(owner, record.id, now)
        items: list[Any] = []
        first = chain[0] if chain else record
        if first.conversation_id is not None and first.context_seq is not None:
            context = await store.list_items(owner, first.conversation_id, now, below_seq=first.context_seq) or []
            items += [orjson.loads(item.item) for item in context]
        for link in chain:
            items += request_items(link.request, link.id)
            if link.id != record.id:
                items += orjson.loads(link.response).get("output", [])
        return [listed(item) for item in items]

    async def _conversations_route(
        self,
        store: Store,
        owner: str,
        parts: list[str],
        method: str,
        query: dict[str, list[str]],
        payload: bytes,
        now: int,
    ) -> bytes:
        if not parts and method == "POST":
            body = _object(payload)
            metadata = _metadata(body.get("metadata"))
            conversation_id = "conv_" + secrets.token_hex(24)
            items = _new_items(body.get("items") or [], conversation_id, 0)
            created = ConversationRecord(conversation_id, owner, now, metadata, 0)
            await store.create_conversation(created, items, self._expires(now))
            return _conversation_json(created)
        if not parts:
            raise GatewayError("method_not_allowed", f"Method {method} is not allowed here")
        conversation_id = parts[0]
        record: ConversationRecord | None
        if len(parts) == 1:
            if method == "GET":
                record = await store.get_conversation(owner, conversation_id, now)
            elif method == "POST":
                metadata = _metadata(_object(payload).get("metadata"))
                record = await store.update_conversation(owner, conversation_id, metadata, now)
            elif method == "DELETE":
                if not await store.delete_conversation(owner, conversation_id, now):
                    raise _not_found("Conversation", conversation_id)
                self.hot.drop("conversation:" + conversation_id)
                return orjson.dumps({"id": conversation_id, "object": "conversation.deleted", "deleted": True})
            else:
                raise GatewayError("method_not_allowed", f"Method {method} is not allowed here")
            if record is None:
                raise _not_found("Conversation", conversation_id)
            return _conversation_json(record)
        if parts[1] != "items":
            raise GatewayError("not_found", "Not found")
        if len(parts) == 2 and method == "GET":
            found = await store.list_items(owner, conversation_id, now)
            if found is None:
                raise _not_found("Conversation", conversation_id)
            return page([listed(orjson.loads(item.item)) for item in found], query, default_order="desc")
        if len(parts) == 2 and method == "POST":
            body = _object(payload)
            raw = body.get("items")
            if not isinstance(raw, list):
                raise GatewayError("invalid_request", "Missing required parameter: 'items'.")
            items = _new_items(raw, conversation_id, int(time.time_ns() % 10**9))
            added = await store.add_items(owner, conversation_id, items, now, self._expires(now))
            if added is None:
                raise _not_found("Conversation", conversation_id)
            data = [listed(orjson.loads(item.item)) for item in added]
            return orjson.dumps(_list_page(data, has_more=False))
        if len(parts) == 3:
            item_id = parts[2]
            if method == "GET":
                found = await store.list_items(owner, conversation_id, now)
                if found is None:
                    raise _not_found("Conversation", conversation_id)
                for item in found:
                    if item.id == item_id:
                        return orjson.dumps(listed(orjson.loads(item.item)))
                raise _not_found("Item", item_id)
            if method == "DELETE":
                deleted = await store.delete_item(owner, conversation_id, item_id, now)
                if deleted is None:
                    raise _not_found("Conversation", conversation_id)
                if not deleted:
                    raise _not_found("Item", item_id)
                record = await store.get_conversation(owner, conversation_id, now)
                if record is None:
                    raise _not_found("Conversation", conversation_id)
                return _conversation_json(record)
        raise GatewayError("not_found", "Not found")


# -- items -------------------------------------------------------------------------------------

_ID_PREFIXES = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
    "custom_tool_call": "ctc",
    "custom_tool_call_output": "ctco",
}


def _item_id(kind: str, owner_id: str, index: int) -> str:
    return f"{_ID_PREFIXES.get(kind, 'item')}_{owner_id.split('_', 1)[-1]}_{index}"


def request_items(body: bytes, response_id: str) -> list[Any]:
    """A stored request's input items, each with an id (the item's own, or one made from the
    response's id and the item's place)."""
    request = orjson.loads(body)
    raw = request.get("input")
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [{"role": "user", "content": raw}]
    items = []
    for index, item in enumerate(raw):
        if isinstance(item, dict):
            kind = item.get("type") or "message"
            items.append({**item, "id": item.get("id") or _item_id(kind, response_id, index)})
    return items


def _new_items(raw: list[Any], conversation_id: str, salt: int) -> list[tuple[str, bytes]]:
    if len(raw) > MAX_ITEMS_PER_REQUEST:
        raise GatewayError(
            "invalid_request",
            f"Invalid 'items': array too long. Expected an array with maximum length {MAX_ITEMS_PER_REQUEST}, "
            f"but got an array with length {len(raw)} instead.",
        )
    out = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or not ("type" in item or "role" in item):
            raise GatewayError("invalid_request", f"Invalid 'items[{index}]': expected an input item.")
        kind = item.get("type") or "message"
        item_id = item.get("id") or f"{_ID_PREFIXES.get(kind, 'item')}_{secrets.token_hex(16)}"
        out.append((str(item_id), orjson.dumps({**item, "id": item_id})))
    # Shape-check them as the conversion would read them.
    try:
        ResponsesHistory.from_json(b"[" + b",".join(b for _, b in out) + b"]")
    except ValueError as error:
        raise GatewayError("invalid_request", str(error)) from None
    return out


def listed(item: Any) -> Any:
    """An input item in the shape the official API lists items in (``message`` items with
    content parts and a status, calls and outputs with a status)."""
    if not isinstance(item, dict):
        return item
    kind = item.get("type") or "message"
    out = {**item, "type": kind}
    if kind == "message":
        role = out.get("role", "user")
        content = out.get("content")
        part = "output_text" if role == "assistant" else "input_text"
        if isinstance(content, str):
            content = [{"type": part, "text": content}]
        parts = []
        for piece in content or []:
            if role == "assistant" and isinstance(piece, dict) and piece.get("type") in ("input_text", "output_text"):
                piece = {
                    "type": "output_text",
                    "text": piece.get("text", ""),
                    "annotations": piece.get("annotations", []),
                }
            parts.append(piece)
        out["content"] = parts
        out.setdefault("status", "completed")
    elif kind in ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"):
        out.setdefault("status", "completed")
    elif kind == "reasoning":
        out.setdefault("summary", [])
    return out


def page(items: list[Any], query: dict[str, list[str]], *, default_order: str) -> bytes:
    """One page of ``items`` as the official list shape, after ``limit``, ``order``, ``after``."""
    order = (query.get("order") or [default_order])[0]
    if order not in ("asc", "desc"):
        raise GatewayError("invalid_request", "Invalid 'order': expected 'asc' or 'desc'.")
    try:
        limit = int((query.get("limit") or ["20"])[0])
    except ValueError:
        raise GatewayError("invalid_request", "Invalid 'limit': expected an integer.") from None
    if not 1 <= limit <= 100:
        raise GatewayError("invalid_request", "Invalid 'limit': expected a value between 1 and 100.")
    ordered = items if order == "asc" else items[::-1]
    after = query["after"][0] if query.get("after") else None
    if after is not None:
        ids = [item.get("id") for item in ordered]
        if after not in ids:
            raise GatewayError("not_found", f"Item with id '{after[:64]}' not found.")
        ordered = ordered[ids.index(after) + 1 :]
    data = ordered[:limit]
    return orjson.dumps(_list_page(data, has_more=len(ordered) > limit))


def _list_page(data: list[Any], *, has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": data,
        "first_id": data[0].get("id") if data else None,
        "last_id": data[-1].get("id") if data else None,
        "has_more": has_more,
    }


def _flag(query: dict[str, list[str]], name: str) -> bool:
    """A boolean query parameter (``true``/``1``; anything else is false)."""
    return (query.get(name) or ["false"])[0].lower() in ("true", "1")


def _object(payload: bytes) -> dict[str, Any]:
    if not payload.strip():
        return {}
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise GatewayError("invalid_request", "The body is not JSON") from None
    if not isinstance(body, dict):
        raise GatewayError("invalid_request", "The body must be a JSON object")
    return body


def _metadata(value: Any) -> bytes:
    if value is None:
        return b"{}"
    request = ResponsesRequest({"model": "", "metadata": value})
    try:
        fields = request.state_fields()
    except ConversionError as error:
        raise GatewayError("invalid_request", str(error)) from None
    return (fields.metadata or "{}").encode()


def _conversation_json(record: ConversationRecord) -> bytes:
    return orjson.dumps(
        {
            "id": record.id,
            "object": "conversation",
            "created_at": record.created_at,
            "metadata": orjson.loads(record.metadata),
        }
    )


__all__ = ["HotStates", "ItemRecord", "StoredResponses", "Turn", "TurnState", "owner_of"]
