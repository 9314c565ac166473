"""``SqlMemoryStore``: the SQLAlchemy implementation of ``MemoryStore``
(``SqlStore`` inherits it).

Each method is one transaction of ``Database`` running a unit of work from
``sql_memories``, ``sql_memory_reads``, ``sql_memory_update``,
``sql_memory_erase``, ``sql_memory_history``, ``sql_recall`` or
``sql_candidates``; idempotent writes go through
``idempotency.idempotent`` in the same transaction. The error contracts are
those of ``store.interfaces.MemoryStore``; the keysets are:
``list_memories`` ``(create time in epoch microseconds, memory_id)``,
``list_memory_versions`` ``(update time micros, memory_id, version)``,
``list_candidates`` ``(create time micros, candidate_id)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TypeVar

from sqlalchemy import Connection

from mnemo_server.domain.memory_models import (
    CandidateDraft,
    Embedding,
    Memory,
    MemoryCandidate,
    MemoryChange,
    MemoryDraft,
    MemoryListQuery,
    MemoryTombstone,
    RecallQuery,
    SavedMemory,
)
from mnemo_server.domain.models import Idempotency, Keyset, Page
from mnemo_server.domain.ranking import SemanticMatch
from mnemo_server.store import sql_candidates
from mnemo_server.store import sql_memories as entries
from mnemo_server.store import sql_memory_erase as erase
from mnemo_server.store import sql_memory_history as history
from mnemo_server.store import sql_memory_reads as reads
from mnemo_server.store import sql_memory_update as updates
from mnemo_server.store import sql_recall as recall
from mnemo_server.store.database import Database
from mnemo_server.store.idempotency import DEFAULT_WINDOW, idempotent
from mnemo_server.store.sql_governance import gated_read
from mnemo_server.store.vector_cache import VectorCache

__all__ = ["SqlMemoryStore"]

T = TypeVar("T")


class SqlMemoryStore:
    """Implements ``MemoryStore``. ``vector_cache``: the process's cache of
    users' vector matrices (a new one by default). ``idempotency_window``:
    how long a request's recorded result answers its retries
    (``store.idempotency``)."""

    def __init__(
        self,
        db: Database,
        *,
        vector_cache: VectorCache | None = None,
        idempotency_window: timedelta = DEFAULT_WINDOW,
    ) -> None:
        self._db = db
        self._vectors = vector_cache if vector_cache is not None else VectorCache()
        self._window_micros = idempotency_window // timedelta(microseconds=1)

    def _idempotent(
        self,
        conn: Connection,
        user_id: str,
        idempotency: Idempotency | None,
        result_type: type[T],
        work: Callable[[], T],
    ) -> T:
        """``idempotency.idempotent`` with this store's window."""
        return idempotent(
            conn, user_id, idempotency, result_type, work, window_micros=self._window_micros
        )

    @property
    def vector_cache(self) -> VectorCache:
        return self._vectors

    async def create_memories(
        self,
        user_id: str,
        drafts: Sequence[tuple[str, MemoryDraft]],
        *,
        idempotency: Idempotency | None,
        origin_conversation_id: str = "",
    ) -> tuple[SavedMemory, ...]:
        return await self._db.write(
            lambda conn: self._idempotent(
                conn,
                user_id,
                idempotency,
                tuple[SavedMemory, ...],
                lambda: entries.create(conn, user_id, drafts, origin_conversation_id),
            )
        )

    async def get_memory(self, user_id: str, memory_id: str) -> Memory:
        return await self._db.read(
            lambda conn: gated_read(conn, user_id, lambda: reads.get(conn, user_id, memory_id))
        )

    async def list_memories(self, user_id: str, query: MemoryListQuery) -> Page[Memory]:
        return await self._db.read(
            lambda conn: gated_read(conn, user_id, lambda: reads.list_page(conn, user_id, query))
        )

    async def update_memory(
        self, user_id: str, memory_id: str, change: MemoryChange, *, expected_etag: str | None
    ) -> Memory:
        return await self._db.write(
            lambda conn: updates.update_entry(conn, user_id, memory_id, change, expected_etag)
        )

    async def delete_memory(
        self, user_id: str, memory_id: str, *, expected_etag: str | None
    ) -> MemoryTombstone:
        return await self._db.write(
            lambda conn: erase.erase(conn, user_id, memory_id, expected_etag)
        )

    async def list_memory_versions(
        self, user_id: str, memory_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Memory]:
        return await self._db.read(
            lambda conn: gated_read(
                conn,
                user_id,
                lambda: history.list_versions(conn, user_id, memory_id, limit, after),
            )
        )

    async def lexical_candidates(
        self, user_id: str, query: RecallQuery, *, limit: int
    ) -> list[Memory]:
        return await self._db.read(lambda conn: recall.lexical(conn, user_id, query, limit))

    async def semantic_candidates(
        self, user_id: str, query: RecallQuery, embedding: Embedding, *, limit: int
    ) -> list[SemanticMatch]:
        return await self._db.read(
            lambda conn: recall.semantic(conn, user_id, query, embedding, limit, self._vectors)
        )

    async def propose_candidates(
        self,
        user_id: str,
        candidates: Sequence[CandidateDraft],
        *,
        idempotency: Idempotency | None,
    ) -> tuple[MemoryCandidate, ...]:
        return await self._db.write(
            lambda conn: self._idempotent(
                conn,
                user_id,
                idempotency,
                tuple[MemoryCandidate, ...],
                lambda: sql_candidates.propose(conn, user_id, candidates),
            )
        )

    async def list_candidates(
        self, user_id: str, *, include_resolved: bool, limit: int, after: Keyset | None
    ) -> Page[MemoryCandidate]:
        return await self._db.read(
            lambda conn: gated_read(
                conn,
                user_id,
                lambda: sql_candidates.list_page(conn, user_id, include_resolved, limit, after),
            )
        )

    async def approve_candidate(
        self, user_id: str, candidate_id: str, *, memory_id: str
    ) -> tuple[Memory, MemoryCandidate]:
        return await self._db.write(
            lambda conn: sql_candidates.approve(conn, user_id, candidate_id, memory_id)
        )

    async def reject_candidate(self, user_id: str, candidate_id: str) -> MemoryCandidate:
        return await self._db.write(lambda conn: sql_candidates.reject(conn, user_id, candidate_id))
