"""Conversation-history use cases (Anvia) on top of ``ConversationStore``.

Input is validated at the edge (which also picks generated conversation ids
and the lifetime of temporary conversations); the writes are commands
(``domain.commands.conversations``) that go to the store as they are
(``usecases.writes``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from mnemo_server.domain.models import (
    Conversation,
    ConversationKey,
    FailedRun,
    HistorySnapshot,
    Keyset,
    Page,
    StoredMessage,
)
from mnemo_server.domain.ports import ConversationStore


def new_conversation_id() -> str:
    """A fresh id (32 hex digits), valid as a resource id."""
    return uuid.uuid4().hex


class Conversations:
    """Reads of conversations and their canonical history, failed runs and compaction."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def get(self, key: ConversationKey) -> Conversation:
        """Raises ``NotFound``."""
        return await self._store.get_conversation(key.user_id, key.conversation_id)

    async def list(self, user_id: str, *, limit: int, after: Keyset | None) -> Page[Conversation]:
        """Most recently updated first."""
        return await self._store.list_conversations(user_id, limit=limit, after=after)

    async def list_messages(
        self, key: ConversationKey, *, start_position: int, limit: int
    ) -> Page[StoredMessage]:
        """Raises ``NotFound``."""
        return await self._store.list_messages(
            key.user_id, key.conversation_id, start_position=start_position, limit=limit
        )

    async def get_message(self, key: ConversationKey, position: int) -> StoredMessage:
        """Raises ``NotFound`` (no conversation, or no message at ``position``)."""
        return await self._store.get_message(key.user_id, key.conversation_id, position)

    def stream_messages(
        self, key: ConversationKey, *, start_position: int, batch_size: int
    ) -> AsyncIterator[tuple[StoredMessage, ...]]:
        """The history from ``start_position`` in batches, every one from the
        history as it stood when the stream began (``ConversationStore.
        stream_messages``). Raises ``NotFound`` before the first batch and
        ``Aborted(CONCURRENT_MODIFICATION)`` if the history is cleared or the
        conversation deleted while it is streamed."""
        return self._store.stream_messages(
            key.user_id, key.conversation_id, start_position=start_position, batch_size=batch_size
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
