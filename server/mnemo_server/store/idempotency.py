"""Idempotent writes: the result of a request is recorded in the transaction
that wrote it, keyed by (user_id, request_id)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, select

from mnemo_server.domain import codec
from mnemo_server.domain.errors import request_id_reused
from mnemo_server.domain.models import Idempotency
from mnemo_server.store.convert import now_micros
from mnemo_server.store.database import RetryTransaction
from mnemo_server.store.dialect import insert_ignoring_conflicts
from mnemo_server.store.schema import idempotency_records

T = TypeVar("T")


def idempotent(
    conn: Connection,
    user_id: str,
    idempotency: Idempotency | None,
    result_type: type[T],
    work: Callable[[], T],
) -> T:
    """``work()``, or the result recorded for the same request.

    Call inside a write transaction. Without ``idempotency`` this is just
    ``work()``. With it: a recorded result with the same scope and fingerprint
    is returned without running ``work``; a different one raises
    ``FailedPrecondition(REQUEST_ID_REUSED)``; otherwise ``work()`` runs and its
    result is recorded (``work`` must have created the user row). If a
    concurrent transaction records the same key first, this one is rolled back
    and retried (``RetryTransaction``), and then returns that record.
    """
    if idempotency is None:
        return work()
    found = conn.execute(
        select(
            idempotency_records.c.scope,
            idempotency_records.c.fingerprint,
            idempotency_records.c.result_json,
        ).where(
            idempotency_records.c.user_id == user_id,
            idempotency_records.c.request_id == idempotency.request_id,
        )
    ).one_or_none()
    if found is not None:
        if (found.scope, found.fingerprint) != (idempotency.scope, idempotency.fingerprint):
            raise request_id_reused(idempotency.request_id)
        return codec.loads(result_type, found.result_json)
    result = work()
    inserted = conn.execute(
        insert_ignoring_conflicts(conn, idempotency_records)
        .values(
            user_id=user_id,
            request_id=idempotency.request_id,
            scope=idempotency.scope,
            fingerprint=idempotency.fingerprint,
            result_json=codec.dumps(result),
            created_at=now_micros(),
        )
        .returning(idempotency_records.c.request_id)
    ).one_or_none()
    if inserted is None:
        raise RetryTransaction(f"request_id {idempotency.request_id!r} recorded concurrently")
    return result
