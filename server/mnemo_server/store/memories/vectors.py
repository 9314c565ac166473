"""Entries' vectors, as every memory write stores them, and the one seam to
the server's embedder.

Vector rows (``memory_embeddings``): ``vector_row`` builds one,
``check_dimensions`` refuses a vector whose length is not that of the
user's stored vectors of its model, ``store_new`` stores the vectors of
newly saved entries, ``vectors_changed`` records that the user's set of live
vectors changed (``vector_cache``).

The backlog (``embedding_backlog``; ``domain.embedding_backlog``): a write
that leaves an entry without a vector says so with ``queue``, which only
collects the entry's key on the write's ``Tx`` (``Tx.to_embed``), as the
write collects the users whose change feed it moved; nothing about the
server's embedder is threaded through the save paths. ``EmbedLater`` runs
every write of a store that embeds (``SqlStore(embed_later=True)``): at the
end of the write's unit, in its transaction, the collected entries join the
backlog (one statement), and once the write committed their users are
handed to the worker (``EmbedLater.queued``, the one hook). A store that
does not embed drops what was collected. ``embedding_store`` takes the
entries off the backlog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, delete, insert, select, update

from mnemo_server.domain.embedding import dimension_mismatch
from mnemo_server.domain.errors import Entry
from mnemo_server.domain.memory_models import Embedding
from mnemo_server.domain.vectors import encode_vector
from mnemo_server.store.engine.dialect import insert_ignoring_conflicts
from mnemo_server.store.schema import embedding_backlog, memory_embeddings, memory_user_state
from mnemo_server.store.transactions.tx import Tx

if TYPE_CHECKING:
    from mnemo_server.store.transactions.database import Database

__all__ = [
    "EmbedLater",
    "check_dimensions",
    "queue",
    "store_new",
    "unqueue",
    "vector_row",
    "vectors_changed",
]

R = TypeVar("R")


def vector_row(memory_pk: int, user_id: str, embedding: Embedding) -> dict[str, Any]:
    """The ``memory_embeddings`` row of an entry's vector."""
    return {
        "memory_pk": memory_pk,
        "user_id": user_id,
        "model": embedding.model,
        "dimensions": embedding.dimensions,
        "vector": encode_vector(embedding.values),
    }


def check_dimensions(
    conn: Connection,
    user_id: str,
    embeddings: Sequence[tuple[Entry, Embedding]],
    *,
    except_pk: int | None = None,
) -> None:
    """Raise ``dimension_mismatch`` (for the ``(entry, embedding)`` at fault)
    unless every embedding has the dimension of the user's stored vectors of
    its model (other than entry ``except_pk``'s) and of the earlier ones."""
    expected: dict[str, int] = {}
    for entry, embedding in embeddings:
        if embedding.model not in expected:
            query = select(memory_embeddings.c.dimensions).where(
                memory_embeddings.c.user_id == user_id,
                memory_embeddings.c.model == embedding.model,
            )
            if except_pk is not None:
                query = query.where(memory_embeddings.c.memory_pk != except_pk)
            stored = conn.execute(query.limit(1)).scalar_one_or_none()
            expected[embedding.model] = embedding.dimensions if stored is None else stored
        if embedding.dimensions != expected[embedding.model]:
            raise dimension_mismatch(
                entry, expected=expected[embedding.model], got=embedding.dimensions
            )


def vectors_changed(conn: Connection, user_id: str) -> None:
    """Record that the user's set of live vectors changed (``vector_cache``)."""
    conn.execute(
        update(memory_user_state)
        .where(memory_user_state.c.user_id == user_id)
        .values(vectors_version=memory_user_state.c.vectors_version + 1)
    )


def store_new(
    tx: Tx,
    user_id: str,
    given: Sequence[tuple[int, Embedding]],
    computed: Sequence[tuple[int, Embedding | None]],
) -> int:
    """Store the vectors of newly saved entries (``memory_pk``, vector):
    those the client ``given``, then those ``computed`` by the server's
    model (the near-duplicate check's); an entry of ``computed`` without
    one joins the backlog (``queue``). How many vectors were stored."""
    rows = [vector_row(pk, user_id, e) | {"computed": False} for pk, e in given]
    rows += [vector_row(pk, user_id, e) | {"computed": True} for pk, e in computed if e is not None]
    if rows:
        tx.conn.execute(insert(memory_embeddings), rows)
    queue(tx, user_id, [pk for pk, e in computed if e is None])
    return len(rows)


def queue(tx: Tx, user_id: str, memory_pks: Sequence[int]) -> None:
    """The user's entries ``memory_pks`` wait for the server's embedder (when
    this server embeds: ``EmbedLater``); an entry queued already stays
    queued once."""
    tx.to_embed += [(user_id, pk) for pk in memory_pks]


def unqueue(tx: Tx, user_id: str, memory_pk: int) -> None:
    """Take the user's entry off the backlog (a client sent its vector)."""
    tx.to_embed[:] = [key for key in tx.to_embed if key != (user_id, memory_pk)]
    tx.conn.execute(
        delete(embedding_backlog).where(
            embedding_backlog.c.user_id == user_id, embedding_backlog.c.memory_pk == memory_pk
        )
    )


def _write_backlog(tx: Tx) -> list[str]:
    """Add the entries the write queued (``Tx.to_embed``) to the backlog, in
    one statement; their users, in the order first queued."""
    if not tx.to_embed:
        return []
    tx.conn.execute(
        insert_ignoring_conflicts(tx.conn, embedding_backlog),
        [{"memory_pk": pk, "user_id": user_id} for user_id, pk in dict.fromkeys(tx.to_embed)],
    )
    return list(dict.fromkeys(user_id for user_id, _ in tx.to_embed))


class EmbedLater:
    """The server's embedder as the writes of a store see it: ``embeds``,
    whether this server computes the vectors that writes leave out, and
    ``queued``, the worker's hook (``EmbeddingWorker.queued``), told the
    user of every committed write that queued entries."""

    def __init__(self, *, embeds: bool = False) -> None:
        self.embeds = embeds
        self.queued: Callable[[str], None] | None = None

    async def write(
        self, db: Database, work: Callable[[Tx], R], *, weight: int = 0, alone: bool = False
    ) -> tuple[R, int]:
        """``db.write(work, weight=..., alone=...)`` (its result and change
        cursor, and its errors): when this server embeds, the entries
        ``work`` queued join the backlog in its transaction, and once it
        committed, their users go to ``queued``."""
        if not self.embeds:
            return await db.write(work, weight=weight, alone=alone)
        users: list[str] = []

        def queuing(tx: Tx) -> R:
            value = work(tx)
            users[:] = _write_backlog(tx)  # a write run again reports its last run
            return value

        value, cursor = await db.write(queuing, weight=weight, alone=alone)
        hook = self.queued
        if hook is not None:
            for user_id in users:
                hook(user_id)
        return value, cursor
