"""Temporary conversations after their expire time: gone.

A temporary conversation (``conversations.temporary``, chosen at creation)
has an ``expire_at``. Once it has passed, the conversation is treated as one
that does not exist (``unexpired`` in every conversation look-up: reads
answer ``NOT_FOUND``, a write that creates conversations implicitly starts a
new, ordinary one with that id after ``drop_expired``), and the purge
deletes it with its history, failed runs, checkpoints and working memory
(``ON DELETE CASCADE``), plus the idempotency records whose recorded result
names it, and the states of its earlier changes in the change feed; it
appends the conversation's DELETE change.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, delete, or_, select

from mnemo_server.store.engine import dialect
from mnemo_server.store.engine.fan_out import purge_per_user
from mnemo_server.store.engine.statements import Statement
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.schema import conversations, idempotency_records
from mnemo_server.store.transactions.tx import Tx


def unexpired(now: int) -> ColumnElement[bool]:
    """The conversation has no expire time, or it has not passed at ``now``."""
    return or_(conversations.c.expire_at.is_(None), conversations.c.expire_at > now)


def _forget_results(conn: Connection, user_id: str, conversation_id: str) -> None:
    needle = f'"conversation_id":"{conversation_id}"'
    conn.execute(
        delete(idempotency_records).where(
            idempotency_records.c.user_id == user_id,
            dialect.contains(conn, idempotency_records.c.result_json, needle),
        )
    )


def _delete(tx: Tx, rows: list[tuple[int, str, str]]) -> int:
    conn = tx.conn
    for _, user_id, conversation_id in rows:
        _forget_results(conn, user_id, conversation_id)
        change_log.forget_conversation(conn, user_id, conversation_id)
    users = sorted({user_id for _, user_id, _ in rows})
    for user_id in users:  # one user's rows per statement (one shard when sharded)
        pks = [pk for pk, u, _ in rows if u == user_id]
        conn.execute(
            delete(conversations).where(
                conversations.c.user_id == user_id, conversations.c.id.in_(pks)
            )
        )
    # One append per user, users in order: two purges lock the counters alike.
    for user_id in users:
        gone = sorted(c for _, u, c in rows if u == user_id)
        change_log.append(tx, user_id, [change_log.conversation_deleted(user_id, c) for c in gone])
    return len(rows)


_EXPIRED = Statement(
    select(conversations.c.id, conversations.c.user_id, conversations.c.conversation_id)
    .where(
        conversations.c.user_id == bindparam("user_id"),
        conversations.c.conversation_id == bindparam("conversation_id"),
        conversations.c.expire_at <= bindparam("now"),
    )
    .with_for_update()
)


def drop_expired(tx: Tx, user_id: str, conversation_id: str, now: int) -> None:
    """Delete the conversation if it is temporary and expired at ``now``."""
    found = _EXPIRED.all(tx, user_id=user_id, conversation_id=conversation_id, now=now)
    if found:
        _delete(tx, [(r.id, r.user_id, r.conversation_id) for r in found])


def purge_expired(tx: Tx, now: int, limit: int) -> int:
    """Delete up to ``limit`` conversations expired at ``now`` (oldest expiry
    first), locked one user's at a time (``engine.fan_out``); returns how many."""
    locked: list[tuple[int, str, str]] = []

    def lock(user_id: str, ids: list[Any]) -> int:
        rows = tx.conn.execute(
            select(conversations.c.id, conversations.c.user_id, conversations.c.conversation_id)
            .where(
                conversations.c.user_id == user_id,
                conversations.c.id.in_(ids),
                conversations.c.expire_at <= now,
            )
            .order_by(conversations.c.id)
            .with_for_update(skip_locked=True)
        ).all()
        locked.extend((r.id, r.user_id, r.conversation_id) for r in rows)
        return len(rows)

    oldest = (
        select(conversations.c.user_id, conversations.c.id)
        .where(conversations.c.expire_at <= now)
        .order_by(conversations.c.expire_at, conversations.c.id)
        .limit(limit)
    )
    purge_per_user(tx.conn, oldest, lock)
    return _delete(tx, locked)  # every user's, once all are locked (as before)
