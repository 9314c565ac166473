"""The change feed in SQL (``domain.changes``): appending a write's changes in
its transaction, reading them after a cursor, erasing and pruning them.

Cursor allocation: ``append`` first upserts the user's ``change_cursors`` row
(``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``), adding the number of
changes to ``last_cursor``. That row stays locked until the write commits,
so a second write of the same user gets the next cursors only after the
first committed: a user's cursors commit in order, and a reader that saw
cursor ``n`` never later finds a smaller one appear. Writes append after
their other statements, so the lock is held briefly and mostly taken after
every other lock of the write (the rare other order, such as an expired
temporary conversation dropped at the start of a write, is at worst a
deadlock that ``Database`` retries). On SQLite writers are serialized anyway.

The counter row is never deleted (not by an erasure, not by pruning): a
user's cursors only grow. ``last_change_at`` never decreases either, so the
changes of a user have non-decreasing ``created_at`` in cursor order, and
pruning by age removes a prefix of each user's changes, never a change from
the middle.

Expiry (``changes_after``): changes after a cursor are missing only if they
were pruned (an expired cursor) or erased; an erasure leaves its ERASE change
as the user's oldest, which a reader from before it gets first. So a cursor
is expired when ``0 < after < oldest - 1`` and the oldest retained change is
not an ERASE change.

Ahead (``changes_after`` too): since the counter never goes back, no cursor
this database issued is beyond the user's latest one; ``after > latest``
means the cursor came from another database (a restore from an older
backup, a client pointed elsewhere) and is refused with
``OutOfRange(CURSOR_AHEAD)`` rather than answered with an empty page, which
would leave that client waiting for changes it never gets. ``after ==
latest`` (caught up; 0 for a user without changes) is fine.

Whose feed (``changes_after``, ``erase``, ``start_for_new_user``): a user's
feed is its tenant's. While the user exists, its ``users`` row says which
tenant; an erasure deletes that row (unless a consent decision keeps it) but
leaves the ERASE change and the counter for the erased user's other devices,
and records the erased user's tenant on the counter row
(``erased_tenant_id``). A reader of another tenant (the verified caller's,
``None`` under ``--auth none``: any) gets the feed of a user without
changes: none, latest cursor 0, any other cursor ``CURSOR_AHEAD``; so does a
reader of a feed whose owner is unknown (erased before migration 0015). When
a user is created with the id again (``store.users.ensure_user``) by a
tenant other than the erased user's, the old feed goes, counter and all: the
new user's cursors start at 1 and it never sees the old ERASE change. The
same tenant creating it again keeps the feed (a user id names one user of a
tenant; its devices learn of the erasure, then follow the new writes), and a
watch opened by the old tenant ends with ``CURSOR_AHEAD`` at its next read
instead of receiving the new user's changes.

The state is stored as ``domain.codec`` JSON with its type name; vectors are
left out (no API message carries them, and they are large).
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    bindparam,
    case,
    delete,
    or_,
    select,
)
from sqlalchemy import update as sql_update

from mnemo_server.domain import codec
from mnemo_server.domain.changes import (
    Change,
    ChangeOperation,
    ChangePage,
    ChangeState,
    NewChange,
)
from mnemo_server.domain.checkpoints import CheckpointRef
from mnemo_server.domain.documents import Document
from mnemo_server.domain.errors import OutOfRange
from mnemo_server.domain.governance import (
    Consent,
    MemorySettings,
    consent_name,
    memory_settings_name,
)
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import Memory, MemoryCandidate, MemoryTombstone
from mnemo_server.domain.models import (
    Conversation,
    ConversationKey,
    FailedRun,
    MemoryState,
    StoredMessage,
)
from mnemo_server.domain.names import (
    conversation_name,
    failed_run_name,
    memory_candidate_name,
    memory_name,
    memory_state_name,
    message_name,
    user_name,
)
from mnemo_server.store.engine.fan_out import purge_per_user
from mnemo_server.store.engine.statements import Statement, insert_per_dialect, insert_row
from mnemo_server.store.feed.notify import CHANNEL, notify_change
from mnemo_server.store.rows import now_micros, to_datetime
from mnemo_server.store.schema import change_cursors, changes, users
from mnemo_server.store.transactions.tx import Tx

__all__ = [
    "STATE_TYPES",
    "append",
    "candidate_upserted",
    "changes_after",
    "consent_upserted",
    "conversation_deleted",
    "conversation_upserted",
    "erase",
    "failed_run_recorded",
    "forget_conversation",
    "latest_cursors",
    "memory_deleted",
    "memory_state_upserted",
    "memory_upserted",
    "message_appended",
    "prune",
    "settings_upserted",
    "start_for_new_user",
    "strip_states",
    "upsert",
]

STATE_TYPES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        MemoryState,
        Conversation,
        StoredMessage,
        Memory,
        MemoryTombstone,
        MemorySettings,
        Consent,
        MemoryCandidate,
        FailedRun,
        Document,
        CheckpointRef,
    )
}
"""The stored type name of each kind of state."""


def _slim(state: ChangeState) -> ChangeState:
    """The state as stored: without vectors."""
    if isinstance(state, Memory) and state.embedding is not None:
        return dataclasses.replace(state, embedding=None)
    if isinstance(state, MemoryCandidate) and state.draft.embedding is not None:
        return dataclasses.replace(state, draft=dataclasses.replace(state.draft, embedding=None))
    return state


# The user's counter moves by ``count`` (created at ``now`` if missing); the
# row stays locked until the write commits.
_ALLOCATE = insert_per_dialect(
    lambda insert: (
        insert(change_cursors)
        .values(
            user_id=bindparam("user_id"),
            last_cursor=bindparam("count"),
            last_change_at=bindparam("now"),
        )
        .on_conflict_do_update(
            index_elements=[change_cursors.c.user_id],
            set_={
                "last_cursor": change_cursors.c.last_cursor + bindparam("count"),
                "last_change_at": case(
                    (
                        change_cursors.c.last_change_at > bindparam("now"),
                        change_cursors.c.last_change_at,
                    ),
                    else_=bindparam("now"),
                ),
            },
        )
        .returning(change_cursors.c.last_cursor, change_cursors.c.last_change_at)
    )
)
_INSERT = Statement(insert_row(changes, without=()))
# PostgreSQL: the counter's move and the insert of the changes in one
# statement (a data-modifying CTE), one round trip instead of two. The rows
# are a VALUES list with parameters of their own (text arrays, the other way
# to pass them, cost psycopg far more to write out: every value escaped).
_PG_COUNTER = """
    counter AS (
        INSERT INTO change_cursors (user_id, last_cursor, last_change_at)
        VALUES (%(user_id)s, %(count)s, %(now)s)
        ON CONFLICT (user_id) DO UPDATE SET
            last_cursor = change_cursors.last_cursor + EXCLUDED.last_cursor,
            last_change_at = GREATEST(change_cursors.last_change_at, EXCLUDED.last_change_at)
        RETURNING last_cursor, last_change_at
    )"""
_PG_INSERT = """
    INSERT INTO changes
        (user_id, cursor, operation, resource_name, etag, state_type, state_json, created_at)
    SELECT %(user_id)s, counter.last_cursor - %(count)s + item.ord, item.operation,
           item.resource_name, item.etag, item.state_type, item.state_json,
           counter.last_change_at
    FROM counter, (VALUES {rows}) AS item(ord, operation, resource_name, etag, state_type, state_json)
    RETURNING cursor
"""
_PG_FIELDS = ("operation", "name", "etag", "type", "state")
_PG_CHUNK = 64
"""Changes per statement at most (5 parameters each; PostgreSQL takes 65,535)."""


def _pg_insert(count: int) -> str:
    rows = ", ".join(
        f"({n}, " + ", ".join(f"%({field}_{n})s::text" for field in _PG_FIELDS) + ")"
        for n in range(1, count + 1)
    )
    return _PG_INSERT.format(rows=rows)


@functools.cache
def _pg_append(count: int) -> str:
    """The statement appending ``count`` changes."""
    return f"WITH {_PG_COUNTER}{_pg_insert(count)}"


@functools.cache
def _pg_append_with(count: int, tail: str) -> str:
    """The statement appending ``count`` changes with the data-modifying
    ``tail`` (which may read ``counter.last_cursor``): one row, the last
    cursor and whether ``tail`` returned a row. (A data-modifying CTE runs
    whether or not the query reads it.)"""
    return (
        f"WITH {_PG_COUNTER},\n    fed AS ({_pg_insert(count)}),\n    tail AS ({tail})\n"
        "SELECT (SELECT last_cursor FROM counter), EXISTS (SELECT 1 FROM tail)"
    )


def _row(change: NewChange, memo: codec.Memo) -> tuple[str, str, str, str | None, str | None]:
    state = change.state
    return (
        change.operation.value,
        change.resource_name,
        change.etag,
        None if state is None else type(state).__name__,
        None if state is None else codec.dumps(_slim(state), memo),
    )


def _pg_params(user_id: str, rows: Sequence[tuple[Any, ...]], now: int) -> dict[str, Any]:
    params: dict[str, Any] = {"user_id": user_id, "count": len(rows), "now": now}
    for n, row in enumerate(rows, start=1):
        params.update(zip((f"{field}_{n}" for field in _PG_FIELDS), row, strict=True))
    return params


def append(tx: Tx, user_id: str, new: Sequence[NewChange]) -> int:
    """Append ``new`` (in order) to the user's feed, in the write's
    transaction; call it after the write's other statements. Returns the
    last cursor (0 if ``new`` is empty) and records it as the write's
    ``Tx.change_cursor``. Two statements on SQLite, one on PostgreSQL.

    Deferred (``Tx.defer_feed``, set by an idempotent write on PostgreSQL):
    nothing runs yet and 0 is returned; the append waits in
    ``Tx.pending_feed`` for the write's idempotency record, which rides the
    same statement (``store.transactions.idempotency``)."""
    if not new:
        return 0
    if tx.pending_feed is not None:  # a second append of the write: the first goes now
        flush = tx.pending_feed
        tx.pending_feed = None
        flush("", {})
    rows = [_row(change, tx.memo) for change in new]
    count, now = len(rows), now_micros()
    if tx.dialect == "postgresql" and tx.defer_feed and count <= _PG_CHUNK:

        def pending(tail: str, tail_params: Mapping[str, Any]) -> bool:
            params = _pg_params(user_id, rows, now)
            if not tail:
                cursors = tx.raw.execute(_pg_append(count), params).fetchall()
                _appended(tx, user_id, max(int(found[0]) for found in cursors))
                return False
            last, tailed = tx.raw.execute(
                _pg_append_with(count, tail), params | dict(tail_params)
            ).fetchone()
            _appended(tx, user_id, int(last))
            return bool(tailed)

        tx.pending_feed = pending
        return 0
    if tx.dialect == "postgresql":
        last = 0
        for start in range(0, count, _PG_CHUNK):  # one statement for all but imports
            chunk = rows[start : start + _PG_CHUNK]
            params = _pg_params(user_id, chunk, now)
            cursors = tx.raw.execute(_pg_append(len(chunk)), params).fetchall()
            last = max(int(found[0]) for found in cursors)
    else:
        counter = _ALLOCATE[tx.dialect].one(tx, user_id=user_id, count=count, now=now)
        last, at = int(counter.last_cursor), int(counter.last_change_at)
        first = last - count + 1
        _INSERT.many(
            tx,
            [
                {
                    "user_id": user_id,
                    "cursor": first + offset,
                    "operation": operation,
                    "resource_name": name,
                    "etag": etag,
                    "state_type": state_type,
                    "state_json": state_json,
                    "created_at": at,
                }
                for offset, (operation, name, etag, state_type, state_json) in enumerate(rows)
            ],
        )
    _appended(tx, user_id, last)
    return last


def _appended(tx: Tx, user_id: str, last: int) -> None:
    """What follows an append whose last cursor is ``last``."""
    tx.change_cursor = last
    notify_change(tx, user_id)  # watches hear of it at commit
    if tx.dialect == "postgresql" and not _has_notify_trigger(tx):
        # Sharded by Citus (``store.distribute``): the trigger is gone, the
        # notice goes out on this session, the coordinator's.
        tx.raw.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{user_id} {last}"))


_NOTIFY_TRIGGER: weakref.WeakKeyDictionary[Engine, bool] = weakref.WeakKeyDictionary()
"""Per engine: whether ``change_cursors`` has its notice trigger (migration
0005); ``mnemo migrate --distribute`` drops it. Looked up at the engine's
first append: a server started before the database was distributed must be
restarted."""


def _has_notify_trigger(tx: Tx) -> bool:
    engine = tx.conn.engine
    found = _NOTIFY_TRIGGER.get(engine)
    if found is None:
        row = tx.raw.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'change_cursors_notify' "
            "AND tgrelid = 'change_cursors'::regclass)"
        ).fetchone()
        found = _NOTIFY_TRIGGER[engine] = bool(row[0])
    return found


def upsert(resource_name: str, state: ChangeState) -> NewChange:
    """An UPSERT change carrying ``state`` (and its etag, if it has one)."""
    return NewChange(ChangeOperation.UPSERT, resource_name, getattr(state, "etag", ""), state)


def conversation_upserted(value: Conversation) -> NewChange:
    return upsert(conversation_name(ConversationKey(value.user_id, value.conversation_id)), value)


def conversation_deleted(user_id: str, conversation_id: str) -> NewChange:
    return deleted(conversation_name(ConversationKey(user_id, conversation_id)))


def memory_state_upserted(key: ConversationKey, state: MemoryState) -> NewChange:
    return upsert(memory_state_name(key), state)


def message_appended(key: ConversationKey, message: StoredMessage) -> NewChange:
    return upsert(message_name(key, message.position), message)


def deleted(resource_name: str) -> NewChange:
    """A DELETE of the resource ``resource_name``, without state (a popped
    message, a deleted conversation)."""
    return NewChange(ChangeOperation.DELETE, resource_name)


def failed_run_recorded(key: ConversationKey, run: FailedRun) -> NewChange:
    return upsert(failed_run_name(key, run.failed_run_id), run)


def memory_upserted(value: Memory) -> NewChange:
    return upsert(memory_name(value.user_id, value.memory_id), value)


def memory_deleted(tombstone: MemoryTombstone) -> NewChange:
    name = memory_name(tombstone.user_id, tombstone.memory_id)
    return NewChange(ChangeOperation.DELETE, name, "", tombstone)


def candidate_upserted(value: MemoryCandidate) -> NewChange:
    return upsert(memory_candidate_name(value.user_id, value.candidate_id), value)


def consent_upserted(value: Consent) -> NewChange:
    return upsert(consent_name(value.user_id), value)


def settings_upserted(value: MemorySettings) -> NewChange:
    return upsert(memory_settings_name(value.user_id), value)


def forget_conversation(conn: Connection, user_id: str, conversation_id: str) -> None:
    """Strip the states of the conversation's recorded changes (it was deleted)."""
    name = conversation_name(ConversationKey(user_id, conversation_id))
    strip_states(conn, user_id, [name], [f"{name}/"])


def strip_states(
    conn: Connection,
    user_id: str,
    resource_names: Collection[str] = (),
    prefixes: Collection[str] = (),
) -> None:
    """Remove the state from the user's recorded changes of ``resource_names``
    and of every resource whose name starts with one of ``prefixes`` (privacy:
    a private delete, a purged temporary conversation)."""
    which: list[ColumnElement[bool]] = []
    if resource_names:
        which.append(changes.c.resource_name.in_(sorted(resource_names)))
    which += [changes.c.resource_name.startswith(p, autoescape=True) for p in sorted(prefixes)]
    if not which:
        return
    conn.execute(
        sql_update(changes)
        .where(changes.c.user_id == user_id, changes.c.state_json.is_not(None), or_(*which))
        .values(state_type=None, state_json=None)
    )


def erase(tx: Tx, user_id: str, *, erased_rows: bool, tenant_id: str) -> int:
    """The change feed's part of an erasure: when the rest of it deleted
    anything (``erased_rows``) or the user has changes other than ERASE ones,
    delete every change of the user (an earlier ERASE change too: the new one
    stands for it), append one ERASE change and record ``tenant_id`` (the
    erased user's) as the feed's (module doc); otherwise change nothing, so
    erasing again leaves the feed as it was. How many changes were deleted."""
    if not erased_rows:
        other = tx.conn.execute(
            select(changes.c.cursor)
            .where(changes.c.user_id == user_id, changes.c.operation != ChangeOperation.ERASE.value)
            .limit(1)
        ).first()
        if other is None:
            return 0
    count = int(tx.conn.execute(delete(changes).where(changes.c.user_id == user_id)).rowcount)
    append(tx, user_id, [NewChange(ChangeOperation.ERASE, user_name(user_id))])
    tx.conn.execute(
        sql_update(change_cursors)
        .where(change_cursors.c.user_id == user_id)
        .values(erased_tenant_id=tenant_id)
    )
    return count


def start_for_new_user(tx: Tx, user_id: str, tenant_id: str) -> None:
    """The feed of a user just created in ``tenant_id``: what an erased user
    of the same id left (its ERASE change, its counter) goes unless that user
    was of the same tenant (module doc). One statement, two when something
    goes; call it in the transaction that inserted the ``users`` row."""
    gone = tx.conn.execute(
        delete(change_cursors).where(
            change_cursors.c.user_id == user_id,
            or_(
                change_cursors.c.erased_tenant_id.is_(None),
                change_cursors.c.erased_tenant_id != tenant_id,
            ),
        )
    ).rowcount
    if gone:
        tx.conn.execute(delete(changes).where(changes.c.user_id == user_id))


def _state(state_type: str | None, state_json: str | None) -> ChangeState | None:
    if state_type is None or state_json is None:
        return None
    state: ChangeState = codec.loads(STATE_TYPES[state_type], state_json)
    return state


def _change(row: Any) -> Change:
    return Change(
        user_id=row.user_id,
        cursor=int(row.cursor),
        operation=ChangeOperation(row.operation),
        resource_name=row.resource_name,
        etag=row.etag,
        change_time=to_datetime(row.created_at),
        state=_state(row.state_type, row.state_json),
    )


def _readable(owner: str | None, caller: Caller | None) -> bool:
    """Whether ``caller`` reads a feed of tenant ``owner`` (``None``: unknown)."""
    return caller is None or (owner is not None and owner == caller.tenant_id)


def changes_after(
    conn: Connection, user_id: str, after_cursor: int, limit: int, caller: Caller | None
) -> ChangePage:
    """``ChangeStore.changes_after`` (run it in one read transaction: the
    bounds and the page are of one snapshot). Raises
    ``OutOfRange(CURSOR_EXPIRED)`` and ``OutOfRange(CURSOR_AHEAD)``. A feed
    of another tenant than ``caller``'s reads as the feed of a user without
    changes (module doc)."""
    counter = conn.execute(
        select(change_cursors.c.last_cursor, change_cursors.c.erased_tenant_id, users.c.tenant_id)
        .select_from(change_cursors.outerjoin(users, users.c.user_id == change_cursors.c.user_id))
        .where(change_cursors.c.user_id == user_id)
    ).one_or_none()
    latest = 0
    if counter is not None:
        owner = counter.erased_tenant_id if counter.tenant_id is None else counter.tenant_id
        if not _readable(owner, caller):
            counter = None
        else:
            latest = int(counter.last_cursor)
    if after_cursor > latest:
        raise OutOfRange(
            f"cursor {after_cursor} is beyond the latest change of {user_name(user_id)} "
            f"({latest}): it was not issued by this database; list the resources again "
            f"and follow the changes from cursor {latest}",
            reason="CURSOR_AHEAD",
            metadata={"latest_cursor": str(latest)},
        )
    if counter is None:
        return ChangePage((), 0, 1)
    oldest_row = conn.execute(
        select(changes.c.cursor, changes.c.operation)
        .where(changes.c.user_id == user_id)
        .order_by(changes.c.cursor)
        .limit(1)
    ).one_or_none()
    oldest = latest + 1 if oldest_row is None else int(oldest_row.cursor)
    erased_before = oldest_row is not None and oldest_row.operation == ChangeOperation.ERASE.value
    if 0 < after_cursor < oldest - 1 and not erased_before:
        raise OutOfRange(
            f"the changes of {user_name(user_id)} after cursor {after_cursor} are no longer "
            f"retained (the oldest is {oldest}): list the resources again and follow the "
            f"changes from cursor {latest}",
            reason="CURSOR_EXPIRED",
            metadata={"oldest_cursor": str(oldest), "latest_cursor": str(latest)},
        )
    rows = conn.execute(
        select(changes)
        .where(changes.c.user_id == user_id, changes.c.cursor > after_cursor)
        .order_by(changes.c.cursor)
        .limit(limit)
    ).all()
    return ChangePage(tuple(_change(row) for row in rows), latest, oldest)


def latest_cursors(conn: Connection, user_ids: Collection[str]) -> dict[str, int]:
    """``ChangeStore.latest_cursors``."""
    wanted = sorted(set(user_ids))
    found: dict[str, int] = dict.fromkeys(wanted, 0)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        for row in conn.execute(
            select(change_cursors.c.user_id, change_cursors.c.last_cursor).where(
                change_cursors.c.user_id.in_(chunk)
            )
        ):
            found[row.user_id] = int(row.last_cursor)
    return found


def prune(conn: Connection, older_than_micros: int, limit: int) -> int:
    """Delete up to ``limit`` changes recorded before ``older_than_micros``,
    oldest first; how many. The counters stay (see the module doc)."""

    # Within a user, cursor order breaks ties of time: a batch boundary never
    # leaves a hole. No SKIP LOCKED: skipping a row would.
    # One user's at a time (``engine.fan_out``).
    def prune(user_id: str, cursors: list[Any]) -> int:
        result = conn.execute(
            delete(changes).where(changes.c.user_id == user_id, changes.c.cursor.in_(cursors))
        )
        return int(result.rowcount)

    oldest = (
        select(changes.c.user_id, changes.c.cursor)
        .where(changes.c.created_at < older_than_micros)
        .order_by(changes.c.created_at, changes.c.user_id, changes.c.cursor)
        .limit(limit)
    )
    return purge_per_user(conn, oldest, prune)
