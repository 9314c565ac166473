"""Queuing entries for the server's embedder in the transaction of the
write that leaves them without a vector (``domain.embedding_backlog``;
``embedding_store`` takes them off)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete

from mnemo_server.store.engine.dialect import insert_ignoring_conflicts
from mnemo_server.store.schema import embedding_backlog
from mnemo_server.store.transactions.tx import Tx

__all__ = ["queue", "unqueue"]


def queue(tx: Tx, user_id: str, memory_pks: Sequence[int]) -> None:
    """Queue the user's entries ``memory_pks`` for the server's embedder,
    when this server computes vectors (``Tx.embed_later``); an entry queued
    already stays queued once."""
    if not tx.embed_later or not memory_pks:
        return
    tx.conn.execute(
        insert_ignoring_conflicts(tx.conn, embedding_backlog),
        [{"memory_pk": pk, "user_id": user_id} for pk in memory_pks],
    )


def unqueue(tx: Tx, user_id: str, memory_pk: int) -> None:
    """Take the user's entry off the backlog (a client sent its vector)."""
    tx.conn.execute(
        delete(embedding_backlog).where(
            embedding_backlog.c.user_id == user_id, embedding_backlog.c.memory_pk == memory_pk
        )
    )
