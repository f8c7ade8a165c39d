"""The store in memory, for tests and throwaway gateways: the same semantics as the SQL
stores (owners, threads, expiry, soft deletion), gone with the process."""

from __future__ import annotations

import dataclasses

from deepseek_recipe.gateway.store import (
    ConversationRecord,
    ItemRecord,
    ResponseRecord,
    RunRecord,
    Store,
    StoreNotFound,
    TurnWrite,
)


@dataclasses.dataclass
class _Conversation:
    record: ConversationRecord
    items: list[ItemRecord]
    next_seq: int


class MemoryStore(Store):
    kind = "memory"

    def __init__(self) -> None:
        self.threads: dict[str, tuple[str, int | None]] = {}
        self.responses: dict[str, ResponseRecord] = {}
        self.conversations: dict[str, _Conversation] = {}
        self.runs: dict[str, RunRecord] = {}

    def _live(self, thread: str, now: int) -> bool:
        found = self.threads.get(thread)
        return found is not None and (found[1] is None or found[1] > now)

    def _conversation(self, owner: str, conversation_id: str, now: int) -> _Conversation | None:
        found = self.conversations.get(conversation_id)
        if found is None or found.record.owner != owner or not self._live(conversation_id, now):
            return None
        return found

    async def save_turn(self, turn: TurnWrite) -> int | None:
        record = turn.response
        first: int | None = None
        if record.conversation_id is not None:
            conversation = self.conversations.get(record.conversation_id)
            if conversation is None or conversation.record.owner != record.owner:
                raise StoreNotFound(record.conversation_id)
            first = conversation.next_seq
            conversation.items += [ItemRecord(i, first + k, b) for k, (i, b) in enumerate(turn.conversation_items)]
            conversation.next_seq += len(turn.conversation_items)
            conversation.record = dataclasses.replace(
                conversation.record, version=conversation.record.version + 1, last_response_id=record.id
            )
            if record.context_seq is None:
                record = dataclasses.replace(record, context_seq=first)
        self.threads[record.thread_id] = (record.owner, turn.expires_at)
        self.responses[record.id] = record
        return first

    async def get_response(self, owner: str, response_id: str, now: int) -> ResponseRecord | None:
        found = self.responses.get(response_id)
        if found is None or found.owner != owner or not self._live(found.thread_id, now):
            return None
        return found

    async def response_chain(self, owner: str, response_id: str, now: int) -> list[ResponseRecord]:
        chain: list[ResponseRecord] = []
        current: str | None = response_id
        while current is not None:
            found = await self.get_response(owner, current, now)
            if found is None:
                break
            chain.append(found)
            current = found.previous_id
        return chain[::-1]

    async def prompt_chain(self, owner: str, response_id: str) -> list[tuple[int, bytes]]:
        chain: list[tuple[int, bytes]] = []
        current: str | None = response_id
        while current is not None:
            found = self.responses.get(current)
            if found is None or found.owner != owner:
                break
            chain.append((found.prompt_keep, found.prompt_tail))
            current = found.prompt_base
        return chain[::-1]

    async def delete_response(self, owner: str, response_id: str, now: int) -> bool:
        found = await self.get_response(owner, response_id, now)
        if found is None or found.deleted:
            return False
        self.responses[response_id] = dataclasses.replace(found, deleted=True)
        return True

    async def create_conversation(
        self, record: ConversationRecord, items: list[tuple[str, bytes]], expires_at: int | None
    ) -> None:
        self.threads[record.id] = (record.owner, expires_at)
        stored = [ItemRecord(i, k, b) for k, (i, b) in enumerate(items)]
        self.conversations[record.id] = _Conversation(record, stored, len(items))

    async def get_conversation(self, owner: str, conversation_id: str, now: int) -> ConversationRecord | None:
        found = self._conversation(owner, conversation_id, now)
        return None if found is None else found.record

    async def update_conversation(
        self, owner: str, conversation_id: str, metadata: bytes, now: int
    ) -> ConversationRecord | None:
        found = self._conversation(owner, conversation_id, now)
        if found is None:
            return None
        found.record = dataclasses.replace(found.record, metadata=metadata)
        return found.record

    async def delete_conversation(self, owner: str, conversation_id: str, now: int) -> bool:
        if self._conversation(owner, conversation_id, now) is None:
            return False
        del self.conversations[conversation_id]
        return True

    async def add_items(
        self, owner: str, conversation_id: str, items: list[tuple[str, bytes]], now: int, expires_at: int | None
    ) -> list[ItemRecord] | None:
        found = self._conversation(owner, conversation_id, now)
        if found is None:
            return None
        added = [ItemRecord(i, found.next_seq + k, b) for k, (i, b) in enumerate(items)]
        found.items += added
        found.next_seq += len(items)
        found.record = dataclasses.replace(found.record, version=found.record.version + 1)
        self.threads[conversation_id] = (owner, expires_at)
        return added

    async def list_items(
        self, owner: str, conversation_id: str, now: int, *, below_seq: int | None = None
    ) -> list[ItemRecord] | None:
        found = self._conversation(owner, conversation_id, now)
        if found is None:
            return None
        return [item for item in found.items if below_seq is None or item.seq < below_seq]

    async def delete_item(self, owner: str, conversation_id: str, item_id: str, now: int) -> bool | None:
        found = self._conversation(owner, conversation_id, now)
        if found is None:
            return None
        kept = [item for item in found.items if item.id != item_id]
        if len(kept) == len(found.items):
            return False
        found.items = kept
        found.record = dataclasses.replace(found.record, version=found.record.version + 1)
        return True

    async def cleanup(self, now: int, limit: int) -> int:
        expired = [t for t, (_, at) in self.threads.items() if at is not None and at <= now][:limit]
        for thread in expired:
            del self.threads[thread]
            self.conversations.pop(thread, None)
            for response_id in [r.id for r in self.responses.values() if r.thread_id == thread]:
                del self.responses[response_id]
        runs = [r.id for r in self.runs.values() if r.expires_at <= now][:limit]
        for response_id in runs:
            del self.runs[response_id]
        return len(expired) + len(runs)

    async def put_run(self, record: RunRecord) -> None:
        old = self.runs.get(record.id)
        asked = old is not None and old.cancel_requested
        self.runs[record.id] = dataclasses.replace(record, cancel_requested=asked or record.cancel_requested)

    async def get_run(self, owner: str, response_id: str, now: int) -> RunRecord | None:
        run = self.runs.get(response_id)
        return run if run is not None and run.owner == owner and run.expires_at > now else None

    async def request_cancel(self, owner: str, response_id: str, now: int) -> bool:
        run = await self.get_run(owner, response_id, now)
        if run is not None:
            self.runs[response_id] = dataclasses.replace(run, cancel_requested=True)
        return run is not None

    async def beat(self, response_ids: list[str], now: int) -> list[str]:
        asked = []
        for response_id in response_ids:
            run = self.runs.get(response_id)
            if run is not None:
                self.runs[response_id] = dataclasses.replace(run, heartbeat=now)
                if run.cancel_requested:
                    asked.append(response_id)
        return asked

    async def delete_run(self, owner: str, response_id: str) -> bool:
        run = self.runs.get(response_id)
        if run is None or run.owner != owner:
            return False
        del self.runs[response_id]
        return True
