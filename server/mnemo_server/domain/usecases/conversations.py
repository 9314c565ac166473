"""Conversation-history use cases (Anvia) on top of ``ConversationStore``.

Input is validated at the edge (which also picks generated conversation ids
and the lifetime of temporary conversations); the writes are commands
(``domain.commands.conversations``). Here lives how a long history is read
in batches for streaming.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.conversations import (
    AppendMessages,
    ClearMessages,
    CreateConversation,
    DeleteConversation,
    RecordFailedRun,
    ReplaceHistoryPrefix,
    UpdateConversation,
)
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    FailedRun,
    HistorySnapshot,
    Keyset,
    Page,
    StoredMessage,
)
from mnemo_server.store.interfaces import ConversationStore


def new_conversation_id() -> str:
    """A fresh id (32 hex digits), valid as a resource id."""
    return uuid.uuid4().hex


class Conversations:
    """Conversations and their canonical history, failed runs and compaction."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def create(self, command: CreateConversation) -> Written[Conversation]:
        """Create a conversation. Raises ``AlreadyExists``, ``REQUEST_ID_REUSED``."""
        return await self._store.execute(command)

    async def get(self, key: ConversationKey) -> Conversation:
        """Raises ``NotFound``."""
        return await self._store.get_conversation(key.user_id, key.conversation_id)

    async def list(self, user_id: str, *, limit: int, after: Keyset | None) -> Page[Conversation]:
        """Most recently updated first."""
        return await self._store.list_conversations(user_id, limit=limit, after=after)

    async def update_metadata(self, command: UpdateConversation) -> Written[Conversation]:
        """Raises ``NotFound``, ``ETAG_MISMATCH``."""
        return await self._store.execute(command)

    async def delete(self, command: DeleteConversation) -> Written[None]:
        """Raises ``NotFound``, ``ETAG_MISMATCH``."""
        return await self._store.execute(command)

    async def append(self, command: AppendMessages) -> Written[AppendResult]:
        """Append at dense positions. Raises ``POSITION_MISMATCH``, ``REQUEST_ID_REUSED``."""
        return await self._store.execute(command)

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

    async def clear(self, command: ClearMessages) -> Written[Conversation]:
        """Raises ``NotFound``."""
        return await self._store.execute(command)

    async def record_failed_run(self, command: RecordFailedRun) -> Written[FailedRun]:
        """Raises ``REQUEST_ID_REUSED``."""
        return await self._store.execute(command)

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

    async def replace_prefix(self, command: ReplaceHistoryPrefix) -> Written[HistorySnapshot]:
        """Raises ``NotFound``, ``REVISION_STALE``, ``INVALID_FIELD`` (message_count),
        ``REQUEST_ID_REUSED``."""
        return await self._store.execute(command)
