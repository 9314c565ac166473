"""Conversation-history use cases (Anvia) on top of ``ConversationStore``.

Input is validated at the edge; here live generated conversation ids and how
a long history is read in batches for streaming. (The lifetime of temporary
conversations is the store's: ``SqlStore(temporary_ttl=...)``.)
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    FailedRun,
    HistorySnapshot,
    Idempotency,
    JsonObject,
    Keyset,
    NewMessage,
    Page,
    RunError,
    StoredMessage,
)
from mnemo_server.store.interfaces import ConversationStore


def new_conversation_id() -> str:
    """A fresh id (32 hex digits), valid as a resource id."""
    return uuid.uuid4().hex


def _expected(etag: str) -> str | None:
    return etag or None


class Conversations:
    """Conversations and their canonical history, failed runs and compaction."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def create(
        self,
        user_id: str,
        conversation_id: str,
        *,
        metadata: JsonObject,
        temporary: bool,
        idempotency: Idempotency | None,
    ) -> Conversation:
        """Create a conversation (id generated when empty). A temporary one gets
        its expire time from the store (``SqlStore(temporary_ttl=...)``, from
        ``Settings.temporary_ttl_seconds``). Raises ``AlreadyExists``,
        ``REQUEST_ID_REUSED``."""
        return await self._store.create_conversation(
            user_id,
            conversation_id or new_conversation_id(),
            metadata=metadata,
            temporary=temporary,
            idempotency=idempotency,
        )

    async def get(self, key: ConversationKey) -> Conversation:
        """Raises ``NotFound``."""
        return await self._store.get_conversation(key.user_id, key.conversation_id)

    async def list(self, user_id: str, *, limit: int, after: Keyset | None) -> Page[Conversation]:
        """Most recently updated first."""
        return await self._store.list_conversations(user_id, limit=limit, after=after)

    async def update_metadata(
        self, key: ConversationKey, metadata: JsonObject, *, etag: str
    ) -> Conversation:
        """Raises ``NotFound``, ``ETAG_MISMATCH``."""
        return await self._store.update_conversation_metadata(
            key.user_id, key.conversation_id, metadata, expected_etag=_expected(etag)
        )

    async def delete(self, key: ConversationKey, *, etag: str) -> None:
        """Raises ``NotFound``, ``ETAG_MISMATCH``."""
        await self._store.delete_conversation(
            key.user_id, key.conversation_id, expected_etag=_expected(etag)
        )

    async def append(
        self,
        key: ConversationKey,
        messages: Sequence[NewMessage],
        *,
        run_id: str,
        turn: int,
        expected_position: int | None,
        create_metadata: JsonObject,
        idempotency: Idempotency | None,
    ) -> AppendResult:
        """Append at dense positions. Raises ``POSITION_MISMATCH``, ``REQUEST_ID_REUSED``."""
        return await self._store.append_messages(
            key.user_id,
            key.conversation_id,
            messages,
            run_id=run_id,
            turn=turn,
            expected_position=expected_position,
            create_metadata=create_metadata,
            idempotency=idempotency,
        )

    async def list_messages(
        self, key: ConversationKey, *, start_position: int, limit: int
    ) -> Page[StoredMessage]:
        """Raises ``NotFound``."""
        return await self._store.list_messages(
            key.user_id, key.conversation_id, start_position=start_position, limit=limit
        )

    async def stream_messages(
        self, key: ConversationKey, *, start_position: int, batch_size: int
    ) -> AsyncIterator[tuple[StoredMessage, ...]]:
        """The history from ``start_position`` in batches, up to the message count
        the conversation had when the stream began (messages appended meanwhile
        belong to a later read). Raises ``NotFound`` before the first batch."""
        end = (await self.get(key)).message_count
        position = start_position
        while position < end:
            page = await self.list_messages(
                key, start_position=position, limit=min(batch_size, end - position)
            )
            batch = tuple(m for m in page.items if m.position < end)
            if not batch:
                return
            yield batch
            position = batch[-1].position + 1

    async def clear(self, key: ConversationKey) -> Conversation:
        """Raises ``NotFound``."""
        return await self._store.clear_messages(key.user_id, key.conversation_id)

    async def record_failed_run(
        self,
        key: ConversationKey,
        *,
        run_id: str,
        error: RunError,
        messages: Sequence[NewMessage],
        idempotency: Idempotency | None,
    ) -> FailedRun:
        """Raises ``REQUEST_ID_REUSED``."""
        return await self._store.record_failed_run(
            key.user_id,
            key.conversation_id,
            run_id=run_id,
            error=error,
            messages=messages,
            idempotency=idempotency,
        )

    async def list_failed_runs(
        self, key: ConversationKey, *, limit: int, after: Keyset | None
    ) -> Page[FailedRun]:
        """Newest first. Raises ``NotFound``."""
        return await self._store.list_failed_runs(
            key.user_id, key.conversation_id, limit=limit, after=after
        )

    async def snapshot(self, key: ConversationKey) -> HistorySnapshot:
        """Raises ``NotFound``."""
        return await self._store.snapshot_history(key.user_id, key.conversation_id)

    async def replace_prefix(
        self,
        key: ConversationKey,
        *,
        revision: str,
        message_count: int,
        replacement: Sequence[NewMessage],
        run_id: str,
        idempotency: Idempotency | None,
    ) -> HistorySnapshot:
        """Raises ``NotFound``, ``REVISION_STALE``, ``INVALID_FIELD`` (message_count),
        ``REQUEST_ID_REUSED``."""
        return await self._store.replace_history_prefix(
            key.user_id,
            key.conversation_id,
            revision=revision,
            message_count=message_count,
            replacement=replacement,
            run_id=run_id,
            idempotency=idempotency,
        )
