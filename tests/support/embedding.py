"""Waiting for a server's background embedder (``embedding_worker``): saves
return before their vectors exist, so a test that checks vectors or a
semantic hit first waits until the backlog is empty and every model's
backfill done, read from the database itself."""

from __future__ import annotations

import time

from sqlalchemy import func, select

from mnemo_server.store.schema import embedding_backlog, embedding_models
from tests.support.user_rows import connected

__all__ = ["wait_until_embedded"]


def wait_until_embedded(database_url: str, *, timeout: float = 60.0) -> None:
    """Return once no entry waits for an embedder and every model's backfill
    is done; ``AssertionError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        with connected(database_url) as conn:
            waiting = conn.execute(select(func.count()).select_from(embedding_backlog)).scalar_one()
            walking = conn.execute(
                select(func.count())
                .select_from(embedding_models)
                .where(embedding_models.c.backfill_done.is_(False))
            ).scalar_one()
        if waiting == 0 and walking == 0:
            return
        assert time.monotonic() < deadline, (
            f"{waiting} entries still wait for the embedder, {walking} backfills walking"
        )
        time.sleep(0.02)
