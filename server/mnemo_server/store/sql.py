"""``SqlStore``: the SQLAlchemy implementation of the store interfaces.

Each method is one transaction of ``Database`` running a unit of work from
``sql_working_memory``, ``sql_conversations``, ``sql_history`` or
``sql_compaction`` (long-term memory: ``sql_memory_store.SqlMemoryStore``,
which ``SqlStore`` inherits); idempotent writes go through ``idempotency.idempotent``
in the same transaction. The error contracts are those of
``store.interfaces``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta

from mnemo_server.domain.changes import ChangePage
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    Exchange,
    FailedRun,
    HistorySnapshot,
    Idempotency,
    JsonObject,
    Keyset,
    MemoryState,
    NewMessage,
    Page,
    RememberResult,
    RunError,
    StoredMessage,
)
from mnemo_server.store import sql_changes, sql_users
from mnemo_server.store import sql_compaction as compaction
from mnemo_server.store import sql_conversations as conversations
from mnemo_server.store import sql_history as history
from mnemo_server.store import sql_working_memory as working_memory
from mnemo_server.store.database import Database
from mnemo_server.store.idempotency import DEFAULT_WINDOW, prune_records
from mnemo_server.store.sql_governance_store import SqlGovernanceStore
from mnemo_server.store.sql_memory_store import SqlMemoryStore
from mnemo_server.store.vector_cache import VectorCache

__all__ = ["SqlStore"]


class SqlStore(SqlMemoryStore, SqlGovernanceStore):
    """Implements ``UserStore``, ``WorkingMemoryStore``, ``ConversationStore``,
    ``MemoryStore``, ``GovernanceStore`` and ``ChangeStore``.

    ``temporary_ttl``: when set, a temporary conversation gets an expire time
    this long after its creation. ``vector_cache``: the process's cache of
    users' vector matrices (``vector_cache.VectorCache``; a new one by default).
    ``idempotency_window``: how long a request's recorded result answers its
    retries (``store.idempotency``).
    """

    def __init__(
        self,
        db: Database,
        *,
        temporary_ttl: timedelta | None = None,
        vector_cache: VectorCache | None = None,
        idempotency_window: timedelta = DEFAULT_WINDOW,
    ) -> None:
        super().__init__(db, vector_cache=vector_cache, idempotency_window=idempotency_window)
        self._db = db
        self._ttl_micros = (
            None if temporary_ttl is None else temporary_ttl // timedelta(microseconds=1)
        )

    @property
    def database(self) -> Database:
        return self._db

    # --------------------------------------------------------------- users

    async def tenants_of(self, user_ids: Collection[str]) -> Mapping[str, str]:
        return await self._db.read(lambda conn: sql_users.tenants_of(conn, user_ids))

    # ------------------------------------------------------ working memory

    async def get_state(self, key: ConversationKey) -> MemoryState:
        return await self._db.read(lambda conn: working_memory.get(conn, key))

    async def save_state(
        self,
        key: ConversationKey,
        summary: str,
        recent: Sequence[Exchange],
        *,
        expected_etag: str | None,
    ) -> MemoryState:
        return await self._db.write(
            lambda conn: working_memory.save(conn, key, summary, recent, expected_etag)
        )

    async def remember(
        self,
        key: ConversationKey,
        exchange: Exchange,
        *,
        keep_recent: int,
        summary: str | None,
        expected_etag: str | None,
        idempotency: Idempotency | None,
    ) -> RememberResult:
        return await self._db.write(
            lambda conn: self._idempotent(
                conn,
                key.user_id,
                idempotency,
                RememberResult,
                lambda: working_memory.remember(
                    conn, key, exchange, keep_recent, summary, expected_etag
                ),
            )
        )

    async def clear_state(self, key: ConversationKey, *, expected_etag: str | None) -> MemoryState:
        return await self._db.write(lambda conn: working_memory.clear(conn, key, expected_etag))

    # ------------------------------------------------------- conversations

    async def create_conversation(
        self,
        user_id: str,
        conversation_id: str,
        *,
        metadata: JsonObject,
        temporary: bool,
        idempotency: Idempotency | None,
    ) -> Conversation:
        return await self._db.write(
            lambda conn: self._idempotent(
                conn,
                user_id,
                idempotency,
                Conversation,
                lambda: conversations.create(
                    conn,
                    user_id,
                    conversation_id,
                    metadata=metadata,
                    temporary=temporary,
                    ttl_micros=self._ttl_micros,
                ),
            )
        )

    async def get_conversation(self, user_id: str, conversation_id: str) -> Conversation:
        return await self._db.read(lambda conn: conversations.get(conn, user_id, conversation_id))

    async def list_conversations(
        self, user_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Conversation]:
        """The keyset is ``(update time in epoch microseconds, conversation_id)``."""
        return await self._db.read(
            lambda conn: conversations.list_page(conn, user_id, limit, after)
        )

    async def update_conversation_metadata(
        self, user_id: str, conversation_id: str, metadata: JsonObject, *, expected_etag: str | None
    ) -> Conversation:
        return await self._db.write(
            lambda conn: conversations.update_metadata(
                conn, user_id, conversation_id, metadata, expected_etag
            )
        )

    async def delete_conversation(
        self, user_id: str, conversation_id: str, *, expected_etag: str | None
    ) -> None:
        await self._db.write(
            lambda conn: conversations.remove(conn, user_id, conversation_id, expected_etag)
        )

    # -------------------------------------------------------------- history

    async def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        *,
        run_id: str,
        turn: int,
        expected_position: int | None,
        create_metadata: JsonObject,
        idempotency: Idempotency | None,
    ) -> AppendResult:
        return await self._db.write(
            lambda conn: self._idempotent(
                conn,
                user_id,
                idempotency,
                AppendResult,
                lambda: history.append(
                    conn,
                    user_id,
                    conversation_id,
                    messages,
                    run_id=run_id,
                    turn=turn,
                    expected_position=expected_position,
                    create_metadata=create_metadata,
                ),
            )
        )

    async def list_messages(
        self, user_id: str, conversation_id: str, *, start_position: int, limit: int
    ) -> Page[StoredMessage]:
        return await self._db.read(
            lambda conn: history.list_page(conn, user_id, conversation_id, start_position, limit)
        )

    async def clear_messages(self, user_id: str, conversation_id: str) -> Conversation:
        return await self._db.write(lambda conn: history.clear(conn, user_id, conversation_id))

    async def record_failed_run(
        self,
        user_id: str,
        conversation_id: str,
        *,
        run_id: str,
        error: RunError,
        messages: Sequence[NewMessage],
        idempotency: Idempotency | None,
    ) -> FailedRun:
        return await self._db.write(
            lambda conn: self._idempotent(
                conn,
                user_id,
                idempotency,
                FailedRun,
                lambda: history.record_failed_run(
                    conn, user_id, conversation_id, run_id=run_id, error=error, partial=messages
                ),
            )
        )

    async def list_failed_runs(
        self, user_id: str, conversation_id: str, *, limit: int, after: Keyset | None
    ) -> Page[FailedRun]:
        """The keyset is ``(internal id,)``."""
        return await self._db.read(
            lambda conn: history.list_failed_runs(conn, user_id, conversation_id, limit, after)
        )

    # ------------------------------------------------------------ compaction

    async def snapshot_history(self, user_id: str, conversation_id: str) -> HistorySnapshot:
        return await self._db.read(lambda conn: compaction.snapshot(conn, user_id, conversation_id))

    async def replace_history_prefix(
        self,
        user_id: str,
        conversation_id: str,
        *,
        revision: str,
        message_count: int,
        replacement: Sequence[NewMessage],
        run_id: str,
        idempotency: Idempotency | None,
    ) -> HistorySnapshot:
        return await self._db.write(
            lambda conn: self._idempotent(
                conn,
                user_id,
                idempotency,
                HistorySnapshot,
                lambda: compaction.replace_prefix(
                    conn,
                    user_id,
                    conversation_id,
                    revision=revision,
                    message_count=message_count,
                    replacement=replacement,
                    run_id=run_id,
                ),
            )
        )

    # ---------------------------------------------------------- change feed

    async def changes_after(self, user_id: str, after_cursor: int, *, limit: int) -> ChangePage:
        return await self._db.read(
            lambda conn: sql_changes.changes_after(conn, user_id, after_cursor, limit)
        )

    async def latest_cursors(self, user_ids: Collection[str]) -> Mapping[str, int]:
        return await self._db.read(lambda conn: sql_changes.latest_cursors(conn, user_ids))

    async def prune_changes(self, *, older_than_micros: int, limit: int) -> int:
        return await self._db.write(lambda conn: sql_changes.prune(conn, older_than_micros, limit))

    async def prune_idempotency_records(self, *, older_than_micros: int, limit: int) -> int:
        """Delete up to ``limit`` idempotency records made before
        ``older_than_micros`` (their window has passed: a request with such a
        request_id is new); how many were deleted."""
        return await self._db.write(lambda conn: prune_records(conn, older_than_micros, limit))
