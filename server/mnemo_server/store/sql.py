"""``SqlStore``: the SQLAlchemy implementation of the store interfaces.

Writes are commands (``domain.commands``): ``execute`` runs the unit of work
registered for the command's type (``store.units``; the units live in the
``sql_*`` modules imported below) through ``Database.write``, idempotent when
the command carries a request id. Reads are one read transaction each, of a
function of ``sql_working_memory``, ``sql_conversations``, ``sql_history``,
``sql_compaction`` and ``sql_changes`` (long-term memory:
``sql_memory_store.SqlMemoryStore``; governance:
``sql_governance_store.SqlGovernanceStore``; both inherited). The error
contracts are those of ``store.interfaces`` and ``domain.commands``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import TypeVar

from mnemo_server.domain.changes import ChangePage
from mnemo_server.domain.commands import Command, Written
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
from mnemo_server.store import (
    sql_candidates,  # noqa: F401 (registers units)
    sql_changes,
    sql_memory_erase,  # noqa: F401 (registers units)
    sql_memory_update,  # noqa: F401 (registers units)
    sql_user_erase,  # noqa: F401 (registers units)
    sql_user_import,  # noqa: F401 (registers units)
    sql_users,
    units,
)
from mnemo_server.store import sql_compaction as compaction
from mnemo_server.store import sql_conversations as conversations
from mnemo_server.store import sql_history as history
from mnemo_server.store import sql_working_memory as working_memory
from mnemo_server.store.database import Database
from mnemo_server.store.idempotency import DEFAULT_WINDOW, prune_records
from mnemo_server.store.sql_governance_store import SqlGovernanceStore
from mnemo_server.store.sql_memory_store import SqlMemoryStore
from mnemo_server.store.vector_cache import VectorCache

__all__ = ["SHORT_PAGE", "SqlStore"]

R = TypeVar("R")

SHORT_PAGE = 100
"""Pages up to this many rows count as short reads (``Database.read``)."""


class SqlStore(SqlMemoryStore, SqlGovernanceStore):
    """Implements ``CommandStore``, ``UserStore``, ``WorkingMemoryStore``,
    ``ConversationStore``, ``MemoryStore``, ``GovernanceStore`` and
    ``ChangeStore``.

    ``vector_cache``: the process's cache of users' vector matrices
    (``vector_cache.VectorCache``; a new one by default).
    ``idempotency_window``: how long a request's recorded result answers its
    retries (``store.idempotency``).
    """

    def __init__(
        self,
        db: Database,
        *,
        vector_cache: VectorCache | None = None,
        idempotency_window: timedelta = DEFAULT_WINDOW,
    ) -> None:
        super().__init__(db, vector_cache=vector_cache)
        self._db = db
        self._window_micros = idempotency_window // timedelta(microseconds=1)

    @property
    def database(self) -> Database:
        return self._db

    async def execute(self, command: Command[R]) -> Written[R]:
        value, cursor = await self._db.write(
            units.run(command, window_micros=self._window_micros),
            weight=command.weight,
            alone=command.alone,
        )
        return Written(value, cursor)

    # --------------------------------------------------------------- users

    async def tenants_of(self, user_ids: Collection[str]) -> Mapping[str, str]:
        return await self._db.read(lambda conn: sql_users.tenants_of(conn, user_ids), short=True)

    # ------------------------------------------------------ working memory

    async def get_state(self, key: ConversationKey) -> MemoryState:
        return await self._db.read(lambda conn: working_memory.get(conn, key), short=True)

    # ------------------------------------------------------- conversations

    async def get_conversation(self, user_id: str, conversation_id: str) -> Conversation:
        return await self._db.read(
            lambda conn: conversations.get(conn, user_id, conversation_id), short=True
        )

    async def list_conversations(
        self, user_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Conversation]:
        """The keyset is ``(update time in epoch microseconds, conversation_id)``."""
        return await self._db.read(
            lambda conn: conversations.list_page(conn, user_id, limit, after),
            short=limit <= SHORT_PAGE,
        )

    # -------------------------------------------------------------- history

    async def list_messages(
        self, user_id: str, conversation_id: str, *, start_position: int, limit: int
    ) -> Page[StoredMessage]:
        return await self._db.read(
            lambda conn: history.list_page(conn, user_id, conversation_id, start_position, limit),
            short=limit <= SHORT_PAGE,
        )

    async def list_failed_runs(
        self, user_id: str, conversation_id: str, *, limit: int, after: Keyset | None
    ) -> Page[FailedRun]:
        """The keyset is ``(internal id,)``."""
        return await self._db.read(
            lambda conn: history.list_failed_runs(conn, user_id, conversation_id, limit, after)
        )

    async def snapshot_history(self, user_id: str, conversation_id: str) -> HistorySnapshot:
        return await self._db.read(lambda conn: compaction.snapshot(conn, user_id, conversation_id))

    # ---------------------------------------------------------- change feed

    async def changes_after(self, user_id: str, after_cursor: int, *, limit: int) -> ChangePage:
        return await self._db.read(
            lambda conn: sql_changes.changes_after(conn, user_id, after_cursor, limit)
        )

    async def latest_cursors(self, user_ids: Collection[str]) -> Mapping[str, int]:
        return await self._db.read(lambda conn: sql_changes.latest_cursors(conn, user_ids))

    async def prune_changes(self, *, older_than_micros: int, limit: int) -> int:
        pruned, _ = await self._db.write(
            lambda tx: sql_changes.prune(tx.conn, older_than_micros, limit)
        )
        return pruned

    async def prune_idempotency_records(self, *, older_than_micros: int, limit: int) -> int:
        """Delete up to ``limit`` idempotency records made before
        ``older_than_micros`` (their window has passed: a request with such a
        request_id is new); how many were deleted."""
        pruned, _ = await self._db.write(
            lambda tx: prune_records(tx.conn, older_than_micros, limit)
        )
        return pruned
