"""The candidates of sameness among a user's live entries, as the store reads
them (the rules are the domain's: ``domain.sameness``).

Exact duplicates are found through ``ix_memories_live_fingerprint``: one
index lookup (``live_entries``); the near-duplicate check reads every live
vector of the model (``live_vectors``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from mnemo_server.domain.sameness import LiveEntry, UnitVector, unit_vector
from mnemo_server.domain.vectors import decode_vector
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.schema import memories, memory_embeddings
from mnemo_server.store.transactions.tx import Tx

__all__ = ["LIVE_COLUMNS", "live_entries", "live_vectors"]

_CHUNK = 500

LIVE_COLUMNS = (
    memories.c.memory_id,
    memories.c.fingerprint,
    memories.c.scope,
    memories.c.conversation_id,
    memories.c.key,
)
"""The columns of a ``LiveEntry``, in its order."""


def live_entries(conn: Connection | Tx, user_id: str, prints: Sequence[str]) -> list[LiveEntry]:
    """The user's live entries whose fingerprint is one of ``prints``,
    newest first."""
    if isinstance(conn, Tx):
        conn = conn.conn
    found: list[LiveEntry] = []
    unique = sorted(set(prints))
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        found += (
            LiveEntry(*row)
            for row in conn.execute(
                memories.select()
                .with_only_columns(*LIVE_COLUMNS)
                .where(
                    memories.c.user_id == user_id,
                    memories.c.archived_at.is_(None),
                    fts.one_of(conn, memories.c.fingerprint, chunk, memories.c.fingerprint.type),
                )
                .order_by(memories.c.id.desc())
            )
        )
    return found


def live_vectors(conn: Connection, user_id: str, model: str) -> list[tuple[LiveEntry, UnitVector]]:
    """The user's live entries with a vector of ``model``, each with its
    unit vector (the near-duplicate check reads them all: it is off unless
    asked for)."""
    found = conn.execute(
        select(*LIVE_COLUMNS, memory_embeddings.c.vector)
        .select_from(memory_embeddings.join(memories))
        .where(
            memory_embeddings.c.user_id == user_id,
            memory_embeddings.c.model == model,
            memories.c.user_id == user_id,
            memories.c.archived_at.is_(None),
        )
        .order_by(memories.c.id.desc())
    ).all()
    pool: list[tuple[LiveEntry, UnitVector]] = []
    for row in found:
        vector = unit_vector(decode_vector(row.vector))
        if vector is not None:
            pool.append((LiveEntry(*row[:5]), vector))
    return pool
