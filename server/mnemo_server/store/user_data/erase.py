"""Erasing a user (``DeleteUserData``): every row of the user in every table,
in one write transaction.

Which tables: every table of ``schema.metadata`` with a ``user_id`` column
(``user_tables``), children before parents, the ``users`` row last; a table
added to the schema later is covered without touching this module. The
change feed is the exception (``FEED_TABLES``): when the erasure deletes
anything, the user's changes are deleted (an earlier ERASE change too) and
one ERASE change is appended (``change_log.erase``; the receipt counts the
changes deleted), and the user's cursor counter stays, so that the user's
cursors keep growing and a device learns of the erasure; the counter row
records the erased user's tenant, whose feed it stays (a new user of the
same id in another tenant starts its own: ``store.feed.changes``). An erasure that
finds nothing to delete changes nothing: no change, cursor 0, the earlier
ERASE change left in place (a user erased again and again keeps one).

An erasure that deleted anything, made by someone other than the user (an
admin of the user's tenant, or an operator under ``--auth none``:
``domain.user_data.audits_erasure``), writes its tenant's audit record in
the same transaction (``store.governance.erasures``: who, whom, when, the
receipt's counts, with the tenant read before the ``users`` row goes); the
record's table has no ``user_id`` column, so it outlives every later erasure
of that user. A user erasing their own data leaves no record.

The consent decision and the memory switch survive (``RETAINED_TABLES``):
a user who ever set either keeps the ``user_settings`` row and the
``users`` row it belongs to, so a withdrawn consent or a switch turned off
still refuses the next write; the receipt lists them as retained. Besides
the tables, the SQLite full-text index ``memories_fts`` (not in the
metadata) holds the user's live entries: they are unindexed first, and
``text_index.forget_deleted`` then rewrites the index so that no
token of the user's texts remains in it (also none left behind by earlier
archives and updates, which only unindex). On PostgreSQL the GIN index
follows the table.

On PostgreSQL the erasure first locks what the user's writes lock, in the
order they lock it: its conversations (a history or working-memory write
locks its conversation first), its ``memory_user_state`` row (every memory
write locks it first), then its ``users`` row ``FOR UPDATE`` (inserted first
if missing, so that a write creating the user right now commits first;
writes lock it ``FOR SHARE`` in the memory gate and ``FOR KEY SHARE`` with
every insert that references it). A write already holding any of them
commits before the erasure deletes; a later one waits for the erasure to
commit, finds the user gone and runs again (``store.transactions.database`` retries a
foreign key violation, ``consent.lock_for_memory`` a vanished lock row),
creating the user anew. Taking the locks in the writers' order keeps the
two from deadlocking.

What leaves no copy behind on SQLite: ``PRAGMA secure_delete=ON`` on every
connection (``store.engine.engines``) zeroes the freed space; after the erasure
commits, ``checkpoint_wal`` copies the zeroed pages into the database file
and truncates the WAL, which would otherwise still hold the pages as they
were before.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, Table, delete, select

from mnemo_server.domain.commands.governance import DeleteUserData
from mnemo_server.domain.governance import Consent, MemorySettings
from mnemo_server.domain.user_data import Erased, audits_erasure
from mnemo_server.store.engine.dialect import insert_ignoring_conflicts
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import consent, erasures
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.schema import (
    change_cursors,
    changes,
    conversations,
    memories,
    memory_user_state,
    metadata,
    user_settings,
    users,
)
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit

log = logging.getLogger(__name__)

FTS_INDEX = "memories_fts"
"""The receipt's name for the SQLite full-text index rows."""


FEED_TABLES = (changes, change_cursors)
"""The change feed's tables: they outlive an erasure (see the module doc)."""

RETAINED_TABLES = (user_settings, users)
"""Kept for a user who ever set consent or the memory switch (see the module doc)."""


def user_tables() -> list[Table]:
    """Every table holding user data (a ``user_id`` column) but the change
    feed's: children before their parents, ``users`` last."""
    children_first = [
        table
        for table in reversed(metadata.sorted_tables)
        if "user_id" in table.c and table is not users and table not in FEED_TABLES
    ]
    return [*children_first, users]


@unit(DeleteUserData)
def erase_user(tx: Tx, command: DeleteUserData) -> Erased:
    """Delete the user's rows but the retained ones, and record the erasure
    for the tenant when someone else erased (see the module doc)."""
    user_id, conn = command.user_id, tx.conn
    created = _lock_user_row(conn, user_id)
    tenant_id = conn.execute(
        select(users.c.tenant_id).where(users.c.user_id == user_id)
    ).scalar_one_or_none()
    decision = consent.get_decision(conn, user_id)
    kept = () if decision is None else RETAINED_TABLES
    deleted: dict[str, int] = {}
    if conn.dialect.name == "sqlite":
        live = conn.execute(
            select(memories.c.id, memories.c.search_document).where(
                memories.c.user_id == user_id, memories.c.archived_at.is_(None)
            )
        ).all()
        fts.drop_documents(conn, [(row.id, row.search_document) for row in live])
        deleted[FTS_INDEX] = len(live)
    for table in user_tables():
        if table in kept:
            deleted[table.name] = 0
            continue
        result = conn.execute(delete(table).where(table.c.user_id == user_id))
        deleted[table.name] = int(result.rowcount)
    if created:
        deleted[users.name] -= 1
    fts.forget_deleted(conn)
    deleted[changes.name] = change_log.erase(
        tx, user_id, erased_rows=any(deleted.values()), tenant_id=tenant_id or ""
    )
    if any(deleted.values()) and audits_erasure(command.caller, user_id):
        erasures.record(conn, command.caller, user_id, tenant_id or "", deleted)
    decided, settings = decision or (Consent(user_id), MemorySettings(user_id))
    return Erased(deleted, {table.name: 1 for table in kept}, decided, settings)


def _lock_user_row(conn: Connection, user_id: str) -> bool:
    """PostgreSQL: lock the user's rows that writes lock (see the module doc);
    whether the ``users`` row had to be inserted."""
    if conn.dialect.name != "postgresql":
        return False
    created = conn.execute(
        insert_ignoring_conflicts(conn, users)
        .values(user_id=user_id, tenant_id="", created_at=0)
        .returning(users.c.user_id)
    ).first()
    for locked in (
        select(conversations.c.id)
        .where(conversations.c.user_id == user_id)
        .order_by(conversations.c.id),
        select(memory_user_state.c.user_id).where(memory_user_state.c.user_id == user_id),
        select(users.c.user_id).where(users.c.user_id == user_id),
    ):
        conn.execute(locked.with_for_update()).all()
    return created is not None


def checkpoint_wal(conn: Connection) -> None:
    """SQLite: ``PRAGMA wal_checkpoint(TRUNCATE)`` (run it in a transaction
    that has read nothing yet, after the erasure committed). It waits up to
    the busy timeout for readers of older snapshots; if they outlast it, the
    WAL is checkpointed by SQLite later and a warning is logged. A no-op on
    PostgreSQL."""
    if conn.dialect.name != "sqlite":
        return
    busy, _log_frames, _checkpointed = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
    if busy:
        log.warning("the WAL could not be truncated after an erasure (readers were busy)")
