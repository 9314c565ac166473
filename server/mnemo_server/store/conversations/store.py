"""``SqlConversationStore``: the reads of working memory and of
conversations, their history, failed runs and compaction snapshots, and the
purge of expired temporary conversations.

Each method is one transaction of ``Database`` running a function of
``working_memory``, ``conversation``, ``messages``, ``compaction`` or
``temporary`` (``stream_messages``: one per batch); the writes are commands
(``SqlStore.execute``). The error
contracts are those of ``domain.ports.WorkingMemoryStore`` and
``domain.ports.ConversationStore``; the keysets are: ``list_conversations``
``(update time in epoch microseconds, conversation_id)``,
``list_failed_runs`` ``(internal id,)``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator

from sqlalchemy import Connection

from mnemo_server.domain.errors import not_found
from mnemo_server.domain.models import (
    Conversation,
    ConversationKey,
    FailedRun,
    HistorySnapshot,
    Keyset,
    MemoryState,
    Page,
    StoredMessage,
)
from mnemo_server.domain.names import message_name
from mnemo_server.store.conversations import (
    compaction,
    conversation,
    messages,
    temporary,
    working_memory,
)
from mnemo_server.store.rows import now_micros
from mnemo_server.store.transactions.database import SHORT_PAGE, Database

__all__ = ["SqlConversationStore"]


class SqlConversationStore:
    """Implements ``WorkingMemoryStore`` and ``ConversationStore`` over ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_state(self, key: ConversationKey) -> MemoryState:
        return await self._db.read(lambda conn: working_memory.get(conn, key), short=True)

    async def get_conversation(self, user_id: str, conversation_id: str) -> Conversation:
        return await self._db.read(
            lambda conn: conversation.get(conn, user_id, conversation_id), short=True
        )

    async def list_conversations(
        self, user_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Conversation]:
        return await self._db.read(
            lambda conn: conversation.list_page(conn, user_id, limit, after),
            short=limit <= SHORT_PAGE,
        )

    async def list_messages(
        self, user_id: str, conversation_id: str, *, start_position: int, limit: int
    ) -> Page[StoredMessage]:
        return await self._db.read(
            lambda conn: messages.list_page(conn, user_id, conversation_id, start_position, limit),
            short=limit <= SHORT_PAGE,
        )

    async def get_message(self, user_id: str, conversation_id: str, position: int) -> StoredMessage:
        def read(conn: Connection) -> StoredMessage:
            found = messages.list_page(conn, user_id, conversation_id, position, 1).items
            if not found or found[0].position != position:
                raise not_found(message_name(ConversationKey(user_id, conversation_id), position))
            return found[0]

        return await self._db.read(read, short=True)

    async def stream_messages(
        self, user_id: str, conversation_id: str, *, start_position: int, batch_size: int
    ) -> AsyncIterator[tuple[StoredMessage, ...]]:
        # One short read per batch over one ``messages.HistoryView``: see there
        # why this is one consistent view without a transaction held open.
        short = batch_size <= SHORT_PAGE
        view, batch = await self._db.read(
            functools.partial(
                messages.open_view,
                user_id=user_id,
                conversation_id=conversation_id,
                start_position=start_position,
                limit=batch_size,
            ),
            short=short,
        )
        while batch:
            yield batch
            batch = await self._db.read(
                functools.partial(
                    messages.view_batch,
                    view=view,
                    position=batch[-1].position + 1,
                    limit=batch_size,
                ),
                short=short,
            )

    async def list_failed_runs(
        self, user_id: str, conversation_id: str, *, limit: int, after: Keyset | None
    ) -> Page[FailedRun]:
        return await self._db.read(
            lambda conn: messages.list_failed_runs(conn, user_id, conversation_id, limit, after)
        )

    async def snapshot_history(self, user_id: str, conversation_id: str) -> HistorySnapshot:
        return await self._db.read(lambda conn: compaction.snapshot(conn, user_id, conversation_id))

    async def purge_expired_conversations(self, *, limit: int) -> int:
        purged, _ = await self._db.write(
            lambda tx: temporary.purge_expired(tx, now_micros(), limit), alone=True
        )
        return purged
