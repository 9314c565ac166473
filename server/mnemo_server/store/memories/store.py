"""``SqlMemoryStore``: the reads of long-term memory (``MemoryStore``), the
memories part of ``SqlStore``.

Each method is one read transaction of ``Database`` running a function of
``reads``, ``versions``, ``recall`` or ``candidates`` (the writes are commands: ``SqlStore.execute``). The error
contracts are those of ``domain.ports.MemoryStore``; the keysets are:
``list_memories`` ``(create time in epoch microseconds, memory_id)``,
``list_memory_versions`` ``(update time micros, memory_id, version)``,
``list_candidates`` ``(create time micros, candidate_id)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from sqlalchemy import Connection

from mnemo_server.domain.governance import Access, closed_gate
from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryCandidate,
    MemoryListQuery,
    RecallQuery,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.ranking import RecallResult
from mnemo_server.store.governance.consent import gate_inputs, gated
from mnemo_server.store.memories import candidates, reads, recall, versions
from mnemo_server.store.memories.vector_cache import VectorCache
from mnemo_server.store.transactions.database import SHORT_PAGE, Database

__all__ = ["SqlMemoryStore"]

T = TypeVar("T")


class SqlMemoryStore:
    """Implements the reads of ``MemoryStore``. ``vector_cache``: the
    process's cache of users' vector matrices (a new one by default)."""

    def __init__(self, db: Database, *, vector_cache: VectorCache | None = None) -> None:
        self._db = db
        self._vectors = vector_cache if vector_cache is not None else VectorCache()

    @property
    def vector_cache(self) -> VectorCache:
        return self._vectors

    async def get_memory(self, user_id: str, memory_id: str) -> Memory:
        return await self._db.read(lambda conn: reads.get(conn, user_id, memory_id), short=True)

    async def list_memories(self, user_id: str, query: MemoryListQuery) -> Page[Memory]:
        return await self._db.read(
            lambda conn: reads.list_page(conn, user_id, query), short=query.limit <= SHORT_PAGE
        )

    async def list_memory_versions(
        self, user_id: str, memory_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Memory]:
        return await self._db.read(
            gated(
                user_id, lambda conn: versions.list_versions(conn, user_id, memory_id, limit, after)
            )
        )

    async def recall(
        self,
        user_id: str,
        query: RecallQuery,
        embedding: Embedding | None,
        *,
        access: Access,
        conversation_ids: Sequence[str],
    ) -> RecallResult:
        def read(conn: Connection) -> RecallResult:
            gate = closed_gate(gate_inputs(conn, user_id, conversation_ids), access)
            if gate is not None:
                return RecallResult(gate=gate)
            hits = recall.recall(conn, user_id, query, embedding, self._vectors)
            return RecallResult(hits=tuple(hits))

        return await self._db.read(read)

    async def list_candidates(
        self, user_id: str, *, include_resolved: bool, limit: int, after: Keyset | None
    ) -> Page[MemoryCandidate]:
        return await self._db.read(
            gated(
                user_id,
                lambda conn: candidates.list_page(conn, user_id, include_resolved, limit, after),
            )
        )
