"""Where the gateway keeps stored Responses and conversations: one small interface
(:class:`Store`), on SQLite (the default: a file, no server), PostgreSQL (several gateway
processes or machines; the ``postgres`` extra) or memory (tests).

Everything stored belongs to an *owner* (a hash of the API key that created it; one shared
owner when the gateway takes no keys); every read names its owner, so another key's objects
are never found. Objects live in *threads* (a response and those that continue it, or a
conversation with its items and responses), which expire together after the retention
period; a turn is written in one transaction, so a failure leaves nothing half-written.
Failures to reach the store raise :class:`StoreUnavailable` (the gateway answers 503).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


class StoreUnavailable(Exception):
    """The store cannot be read or written now (unreachable, read-only, full disk, …).
    The message is safe to show: it names the failure, never stored content."""


class StoreNotFound(Exception):
    """An object the operation needs does not exist (for this owner)."""


@dataclass(frozen=True)
class ResponseRecord:
    """One stored turn: the request as sent, the response object, and the prompt's ids
    (``prompt_keep`` ids of ``prompt_base``'s prompt, then ``prompt_tail``)."""

    id: str
    owner: str
    thread_id: str
    created_at: int
    model: str
    request: bytes
    response: bytes
    previous_id: str | None = None
    conversation_id: str | None = None
    #: Conversation mode: the conversation's items before ``context_seq`` were the context.
    context_seq: int | None = None
    prompt_base: str | None = None
    prompt_keep: int = 0
    prompt_tail: bytes = b""
    prompt_depth: int = 0
    deleted: bool = False


@dataclass(frozen=True)
class ConversationRecord:
    id: str
    owner: str
    created_at: int
    metadata: bytes
    #: Changes with every change to the items.
    version: int
    last_response_id: str | None = None


@dataclass(frozen=True)
class ItemRecord:
    id: str
    seq: int
    item: bytes


@dataclass(frozen=True)
class RunRecord:
    """A background response as the process running it last wrote it (the response object
    while it runs, or as it failed or was cancelled), whether another process asked for it to
    be cancelled, and when its process last said it still runs (``heartbeat``, seconds)."""

    id: str
    owner: str
    response: bytes
    heartbeat: int
    expires_at: int
    cancel_requested: bool = False


@dataclass
class TurnWrite:
    """What one completed turn writes, in one transaction."""

    response: ResponseRecord
    expires_at: int | None
    #: Conversation mode: the items to append (the turn's input, then its output).
    conversation_items: list[tuple[str, bytes]] = field(default_factory=list)


Order = Literal["asc", "desc"]


class Store(ABC):
    """The operations the gateway needs; every method may raise :class:`StoreUnavailable`."""

    #: A short name for logs and errors.
    kind: str = "store"

    async def open(self) -> None:  # noqa: B027 (an optional hook)
        """Create or migrate the schema (called once at start)."""

    async def close(self) -> None:  # noqa: B027 (an optional hook)
        """Release connections."""

    @abstractmethod
    async def save_turn(self, turn: TurnWrite) -> int | None:
        """Write the turn (and touch its thread's expiry). Returns, in conversation mode, the
        seq of the first appended item (``StoreNotFound`` if the conversation is gone)."""

    @abstractmethod
    async def get_response(self, owner: str, response_id: str, now: int) -> ResponseRecord | None:
        """The response (deleted ones included, flagged), unless expired or another owner's."""

    @abstractmethod
    async def response_chain(self, owner: str, response_id: str, now: int) -> list[ResponseRecord]:
        """The response and every response it continues, oldest first (empty when unknown)."""

    @abstractmethod
    async def prompt_chain(self, owner: str, response_id: str) -> list[tuple[int, bytes]]:
        """``(keep, tail)`` of the response's prompt and each prompt it extends, oldest first."""

    @abstractmethod
    async def delete_response(self, owner: str, response_id: str, now: int) -> bool:
        """Mark the response deleted (kept while responses continuing it need it)."""

    @abstractmethod
    async def create_conversation(
        self, record: ConversationRecord, items: list[tuple[str, bytes]], expires_at: int | None
    ) -> None: ...

    @abstractmethod
    async def get_conversation(self, owner: str, conversation_id: str, now: int) -> ConversationRecord | None: ...

    @abstractmethod
    async def update_conversation(
        self, owner: str, conversation_id: str, metadata: bytes, now: int
    ) -> ConversationRecord | None: ...

    @abstractmethod
    async def delete_conversation(self, owner: str, conversation_id: str, now: int) -> bool: ...

    @abstractmethod
    async def add_items(
        self, owner: str, conversation_id: str, items: list[tuple[str, bytes]], now: int, expires_at: int | None
    ) -> list[ItemRecord] | None:
        """Append items; ``None`` when the conversation is unknown."""

    @abstractmethod
    async def list_items(
        self, owner: str, conversation_id: str, now: int, *, below_seq: int | None = None
    ) -> list[ItemRecord] | None:
        """Every item (before ``below_seq`` if given), in order; ``None`` when unknown."""

    @abstractmethod
    async def delete_item(self, owner: str, conversation_id: str, item_id: str, now: int) -> bool | None:
        """``None``: no such conversation; ``False``: no such item."""

    @abstractmethod
    async def cleanup(self, now: int, limit: int) -> int:
        """Delete up to ``limit`` expired threads with everything in them, and up to ``limit``
        expired background runs; the count deleted."""

    # -- background responses (``background.py``) --------------------------------------------

    @abstractmethod
    async def put_run(self, record: RunRecord) -> None:
        """Write a background run (a cancel asked for before stays asked for)."""

    @abstractmethod
    async def get_run(self, owner: str, response_id: str, now: int) -> RunRecord | None:
        """The run, unless expired or another owner's."""

    @abstractmethod
    async def request_cancel(self, owner: str, response_id: str, now: int) -> bool:
        """Ask the process running it to cancel it; whether there was such a run."""

    @abstractmethod
    async def beat(self, response_ids: list[str], now: int) -> list[str]:
        """The running process's heartbeat for these runs; those a cancel was asked for."""

    @abstractmethod
    async def delete_run(self, owner: str, response_id: str) -> bool:
        """Forget the run; whether there was one."""


def default_store_dir() -> Path:
    """Where ``deepseek-recipe serve`` keeps its SQLite store unless told otherwise:
    ``$XDG_DATA_HOME/deepseek-recipe``, else ``~/.local/share/deepseek-recipe``."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "deepseek-recipe"


def open_store(url: str, directory: Path | None = None, *, pool_size: int = 8) -> Store | None:
    """The store ``url`` names: ``sqlite`` (a file ``store.sqlite3`` under ``directory``),
    ``sqlite:///path/to/file``, ``postgresql://…`` (needs the ``postgres`` extra), ``memory``,
    or ``none`` (no store: ``None``)."""
    if url == "none":
        return None
    if url == "memory":
        from deepseek_recipe.gateway.store.memory import MemoryStore

        return MemoryStore()
    if url == "sqlite" or url.startswith("sqlite:"):
        from deepseek_recipe.gateway.store.sql import SqliteStore

        if url in ("sqlite", "sqlite:", "sqlite://"):
            path = (directory or default_store_dir()) / "store.sqlite3"
        else:
            path = Path(url.removeprefix("sqlite://"))
        return SqliteStore(path)
    if url.startswith(("postgresql://", "postgres://")):
        from deepseek_recipe.gateway.store.sql import PostgresStore

        return PostgresStore(url, pool_size=pool_size)
    raise ValueError("store must be sqlite, sqlite:///path, postgresql://…, memory or none")
