"""Idempotent writes: the result of a request is recorded in the transaction
that wrote it, keyed by (user_id, request_id), for a window of time.

A record lives for the idempotency window (``--idempotency-window``, 24 hours
by default): a request whose ``request_id`` was recorded longer ago than
that is a new request (its old record is replaced), and the server's
maintenance task deletes records past the window in batches
(``prune_records``). The record keeps the change cursor the first call
produced, so a replay answers the same ``change_cursor``.

The record costs a write one statement: the write runs, then records its
result with ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` the existing
record's window has passed; on PostgreSQL none of its own: the write's
change-feed append waits (``Tx.defer_feed``) and the record rides its
statement as one more data-modifying CTE. A retry is rare, so it pays
instead: when that statement finds a live record (or the write raised a
domain error, which a retry of a request that succeeded may well do, e.g.
an etag that has moved on since), the record is read and either answers
(the write rolls back: ``tx.Replay``) or, recorded for another request,
``REQUEST_ID_REUSED``.
A closed governance gate (``domain.governance.GateClosed``) is the exception:
the write's unit checks the gate first, and its refusal is the answer to a
replay too, so that a withdrawn consent, a memory switch turned off or a
temporary conversation refuses the repeated request as it refuses any other
(the record stays and answers once the gate is open again).
What is recorded is ``command.recorded(result)``: a command may leave out
what no retry needs (``CreateMemories``: the vectors).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from sqlalchemy import Connection, bindparam, delete, select

from mnemo_server.domain import codec
from mnemo_server.domain.commands import Idempotent, result_type
from mnemo_server.domain.errors import MnemoError, request_id_reused
from mnemo_server.domain.governance import GateClosed
from mnemo_server.domain.models import Idempotency
from mnemo_server.store.engine.fan_out import purge_per_user
from mnemo_server.store.engine.statements import Statement, insert_per_dialect
from mnemo_server.store.rows import now_micros
from mnemo_server.store.schema import idempotency_records
from mnemo_server.store.transactions.tx import Replay, Tx

__all__ = ["DEFAULT_WINDOW", "idempotent", "prune_records"]

C = TypeVar("C", bound=Idempotent[Any])
R = TypeVar("R")

DEFAULT_WINDOW = timedelta(hours=24)
"""How long a request's result is kept by default."""

_records = idempotency_records.c
_FIELDS: dict[str, Any] = {
    "user_id": bindparam("user_id"),
    "request_id": bindparam("request_id"),
    "scope": bindparam("scope"),
    "fingerprint": bindparam("fingerprint"),
    "result_json": bindparam("result_json"),
    "change_cursor": bindparam("change_cursor"),
    "created_at": bindparam("created_at"),
}
_RECORD = insert_per_dialect(
    lambda insert: (
        insert(idempotency_records)
        .values(**_FIELDS)
        .on_conflict_do_update(
            index_elements=[_records.user_id, _records.request_id],
            set_={
                name: value
                for name, value in _FIELDS.items()
                if name not in ("user_id", "request_id")
            },
            where=_records.created_at <= bindparam("expired_before"),
        )
        .returning(_records.request_id)
    )
)
# The record as the tail of the write's change-feed append (PostgreSQL,
# ``store.feed.changes.append``): its change cursor is the feed counter's new value.
_PG_TAIL = """
        INSERT INTO idempotency_records
            (user_id, request_id, scope, fingerprint, result_json, change_cursor, created_at)
        SELECT %(r_user_id)s::text, %(r_request_id)s::text, %(r_scope)s::text,
               %(r_fingerprint)s::text, %(r_result_json)s::text, counter.last_cursor,
               %(r_created_at)s::bigint
        FROM counter
        ON CONFLICT (user_id, request_id) DO UPDATE SET
            scope = EXCLUDED.scope, fingerprint = EXCLUDED.fingerprint,
            result_json = EXCLUDED.result_json, change_cursor = EXCLUDED.change_cursor,
            created_at = EXCLUDED.created_at
        WHERE idempotency_records.created_at <= %(r_expired_before)s::bigint
        RETURNING request_id
    """
_FIND = Statement(
    select(
        _records.scope, _records.fingerprint, _records.result_json, _records.change_cursor
    ).where(
        _records.user_id == bindparam("user_id"),
        _records.request_id == bindparam("request_id"),
        _records.created_at > bindparam("expired_before"),
    )
)


def idempotent(tx: Tx, command: C, work: Callable[[Tx, C], R], *, window_micros: int) -> R:
    """``work(tx, command)`` with its result recorded under
    ``command.idempotency``; a request recorded less than ``window_micros``
    ago is answered with its recorded result instead (raising ``Replay``:
    what this call wrote rolls back) or, with another scope or fingerprint,
    raises ``FailedPrecondition(REQUEST_ID_REUSED)``. A ``GateClosed``
    raised by ``work`` is raised as it is, recorded request or not."""
    key = command.idempotency
    assert key is not None
    now = now_micros()
    expired_before = now - window_micros
    # PostgreSQL: the write's change-feed append waits for the record, and
    # both go in one statement (``store.feed.changes.append``, ``_PG_TAIL``).
    tx.defer_feed = tx.dialect == "postgresql"
    try:
        result = work(tx, command)
    except GateClosed:
        raise  # the gates apply to a replay too (module doc)
    except MnemoError:
        tx.pending_feed = None  # the write rolls back: its append need not run
        _replay_if_recorded(tx, command, key, expired_before)
        raise
    finally:
        tx.defer_feed = False
    result_json = codec.dumps(command.recorded(result), tx.memo)
    feed, tx.pending_feed = tx.pending_feed, None
    if feed is not None:
        tail = {
            "r_user_id": command.user_id,
            "r_request_id": key.request_id,
            "r_scope": key.scope,
            "r_fingerprint": key.fingerprint,
            "r_result_json": result_json,
            "r_created_at": now,
            "r_expired_before": expired_before,
        }
        recorded: bool = feed(_PG_TAIL, tail)
    else:
        recorded = (
            _RECORD[tx.dialect].first(
                tx,
                user_id=command.user_id,
                request_id=key.request_id,
                scope=key.scope,
                fingerprint=key.fingerprint,
                result_json=result_json,
                change_cursor=tx.change_cursor,
                created_at=now,
                expired_before=expired_before,
            )
            is not None
        )
    if not recorded:  # a live record of an earlier call
        _replay_if_recorded(tx, command, key, expired_before)
    return result


def _replay_if_recorded(
    tx: Tx, command: Idempotent[Any], key: Idempotency, expired_before: int
) -> None:
    """Raise ``Replay`` with the live record of ``key``, or
    ``REQUEST_ID_REUSED`` if it was recorded for another request; return if
    there is none."""
    found = _FIND.first(
        tx, user_id=command.user_id, request_id=key.request_id, expired_before=expired_before
    )
    if found is None:
        return
    if (found.scope, found.fingerprint) != (key.scope, key.fingerprint):
        raise request_id_reused(key.request_id)
    value = codec.loads(result_type(type(command)), found.result_json)
    raise Replay(value, int(found.change_cursor))


def prune_records(conn: Connection, older_than_micros: int, limit: int) -> int:
    """Delete up to ``limit`` records made before ``older_than_micros``
    (oldest first), one user's at a time (``engine.fan_out``); how many."""

    def prune(user_id: str, request_ids: list[Any]) -> int:
        unlocked = (
            select(_records.request_id)
            .where(
                _records.user_id == user_id,
                _records.request_id.in_(request_ids),
                _records.created_at < older_than_micros,
            )
            .with_for_update(skip_locked=True)
        )
        result = conn.execute(
            delete(idempotency_records).where(
                _records.user_id == user_id, _records.request_id.in_(unlocked)
            )
        )
        return int(result.rowcount)

    oldest = (
        select(_records.user_id, _records.request_id)
        .where(_records.created_at < older_than_micros)
        .order_by(_records.created_at)
        .limit(limit)
    )
    return purge_per_user(conn, oldest, prune)
