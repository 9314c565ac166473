"""Waiting for a server's background embedder (``embedding_worker``): saves
return before their vectors exist, so a test that checks vectors or a
semantic hit first waits until the backlog is empty and every model's
backfill done, read from the database itself. Entries the backlog holds
because a memory gate of theirs is closed (``embedding_store.gates_open``)
do not wait: they are embedded only once it opens."""

from __future__ import annotations

import time

from sqlalchemy import and_, func, or_, select

from mnemo_server.store.memories.embedding_store import gates_open
from mnemo_server.store.schema import (
    embedding_backlog,
    embedding_models,
    memories,
    memory_embeddings,
)
from tests.support.user_rows import connected

__all__ = ["wait_until_embedded"]


def wait_until_embedded(
    database_url: str, *, model: str | None = None, timeout: float = 60.0
) -> None:
    """Return once no entry waits for an embedder and every model's backfill
    is done, and, given ``model``, once every entry has a vector of that
    model or one its client gave; ``AssertionError`` after ``timeout``
    seconds.

    Give ``model`` after the server's model changed: the new model's lease
    comes after the server starts, and on Citus a backfill step commits on
    several nodes (``embedding_models`` is a reference table, the backlog is
    a worker's), so a reader may see the step done before its queued entries
    (PostgreSQL's snapshots do not span nodes). The vectors themselves are
    on the user's worker, where a reader sees them or not."""
    deadline = time.monotonic() + timeout
    vector = memory_embeddings.c
    while True:
        with connected(database_url) as conn:
            waiting = conn.execute(
                select(func.count())
                .select_from(embedding_backlog.join(memories))
                .where(gates_open())
            ).scalar_one()
            walking = conn.execute(
                select(func.count())
                .select_from(embedding_models)
                .where(embedding_models.c.backfill_done.is_(False))
            ).scalar_one()
            missing = 0
            if model is not None:
                missing = conn.execute(
                    select(func.count())
                    .select_from(memories.outerjoin(memory_embeddings))
                    .where(
                        or_(
                            vector.memory_pk.is_(None),
                            and_(vector.computed, vector.model != model),
                        )
                    )
                ).scalar_one()
        if waiting == 0 and walking == 0 and missing == 0:
            return
        assert time.monotonic() < deadline, (
            f"{waiting} entries still wait for the embedder, {walking} backfills walking, "
            f"{missing} entries without a vector of {model!r}"
        )
        time.sleep(0.02)
