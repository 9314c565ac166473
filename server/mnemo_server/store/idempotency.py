"""Idempotent writes: the result of a request is recorded in the transaction
that wrote it, keyed by (user_id, request_id), for a window of time.

A record lives for the idempotency window (``--idempotency-window``, 24 hours
by default): a request whose ``request_id`` was recorded longer ago than
that is a new request (its old record is replaced), and the server's
maintenance task deletes records past the window in batches
(``prune_records``). The record keeps the change cursor the first call
produced, so a replay answers the same ``change_cursor``
(``store.change_sink``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from sqlalchemy import Connection, delete, select, tuple_

from mnemo_server.domain import codec
from mnemo_server.domain.errors import request_id_reused
from mnemo_server.domain.models import Idempotency
from mnemo_server.store import change_sink
from mnemo_server.store.convert import now_micros
from mnemo_server.store.database import RetryTransaction
from mnemo_server.store.dialect import insert_ignoring_conflicts
from mnemo_server.store.schema import idempotency_records

T = TypeVar("T")

DEFAULT_WINDOW = timedelta(hours=24)
"""How long a request's result is kept by default."""

_DEFAULT_WINDOW_MICROS = DEFAULT_WINDOW // timedelta(microseconds=1)


def idempotent(
    conn: Connection,
    user_id: str,
    idempotency: Idempotency | None,
    result_type: type[T],
    work: Callable[[], T],
    *,
    window_micros: int = _DEFAULT_WINDOW_MICROS,
) -> T:
    """``work()``, or the result recorded for the same request.

    Call inside a write transaction. Without ``idempotency`` this is just
    ``work()``. With it: a result recorded less than ``window_micros`` ago
    with the same scope and fingerprint is returned without running
    ``work`` (and its change cursor reported again); a different one raises
    ``FailedPrecondition(REQUEST_ID_REUSED)`` and writes nothing; an older
    record is dropped. Otherwise ``work()`` runs and its result is recorded
    with the change cursor it produced (``work`` must have created the user
    row). If a concurrent transaction records the same key first, this one
    is rolled back and retried (``RetryTransaction``), and then returns that
    record.
    """
    if idempotency is None:
        return work()
    now = now_micros()
    key = (
        idempotency_records.c.user_id == user_id,
        idempotency_records.c.request_id == idempotency.request_id,
    )
    found = conn.execute(
        select(
            idempotency_records.c.scope,
            idempotency_records.c.fingerprint,
            idempotency_records.c.result_json,
            idempotency_records.c.change_cursor,
            idempotency_records.c.created_at,
        ).where(*key)
    ).one_or_none()
    if found is not None and found.created_at <= now - window_micros:
        conn.execute(delete(idempotency_records).where(*key))
        found = None
    if found is not None:
        if (found.scope, found.fingerprint) != (idempotency.scope, idempotency.fingerprint):
            raise request_id_reused(idempotency.request_id)
        change_sink.report(int(found.change_cursor))
        return codec.loads(result_type, found.result_json)
    before = change_sink.current_cursor()
    result = work()
    produced = change_sink.current_cursor()
    inserted = conn.execute(
        insert_ignoring_conflicts(conn, idempotency_records)
        .values(
            user_id=user_id,
            request_id=idempotency.request_id,
            scope=idempotency.scope,
            fingerprint=idempotency.fingerprint,
            result_json=codec.dumps(result),
            change_cursor=produced if produced != before else 0,
            created_at=now,
        )
        .returning(idempotency_records.c.request_id)
    ).one_or_none()
    if inserted is None:
        raise RetryTransaction(f"request_id {idempotency.request_id!r} recorded concurrently")
    return result


def prune_records(conn: Connection, older_than_micros: int, limit: int) -> int:
    """Delete up to ``limit`` records made before ``older_than_micros``
    (oldest first); how many."""
    oldest = (
        select(idempotency_records.c.user_id, idempotency_records.c.request_id)
        .where(idempotency_records.c.created_at < older_than_micros)
        .order_by(idempotency_records.c.created_at)
        .limit(limit)
    )
    if conn.dialect.name == "postgresql":
        oldest = oldest.with_for_update(skip_locked=True)
    result = conn.execute(
        delete(idempotency_records).where(
            tuple_(idempotency_records.c.user_id, idempotency_records.c.request_id).in_(oldest)
        )
    )
    return int(result.rowcount)
