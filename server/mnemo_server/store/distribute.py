"""Sharding a migrated PostgreSQL database by user over Citus (``mnemo migrate --distribute``).

``distribute(url)`` runs on the coordinator of a Citus cluster (PostgreSQL with
``citus`` in ``shared_preload_libraries`` on every node, ``CREATE EXTENSION
citus`` in the database, the workers added with ``citus_add_node``), on a
database at the newest schema (``mnemo migrate`` upgrades it first). It makes,
in this order (docs/operations.md, "Sharding by user (Citus)"):

- ``app_states``, ``embedding_models``, ``user_erasures`` reference tables
  (``REFERENCE_TABLES``: no user, small, copied to every node);
- ``users`` distributed by ``user_id`` (``create_distributed_table``), the
  anchor of one co-location group;
- every other table with a ``user_id`` column distributed by ``user_id``,
  co-located with ``users``, parents before the tables whose foreign keys
  reference them (read from the catalog, so a table added by a later
  migration is placed by its keys; Citus needs a referenced table distributed
  first);
- ``alembic_version`` stays a local table of the coordinator.

Rows written before are moved into the shards (Citus copies them), and the
coordinator's local copies emptied once every table is distributed.

A table already in ``pg_dist_partition`` as wanted is left alone, so a second run
does nothing and a run that stopped half way (one transaction per table)
continues where it stopped; run it after every upgrade, since a table a new
migration adds starts local. A table distributed any other way, or one that
is neither per-user nor a known reference table, is refused before anything
changes (``NotDistributable``). Runs hold the migrations' advisory lock, so a
server migrating at start waits for them. ``citus.shard_count`` (or
``shard_count``) sets the number of shards of a new co-location group.

**The change feed's notices.** The trigger ``change_cursors_notify``
(migration 0005) sends ``pg_notify`` from the node that writes
``change_cursors``; on Citus that is the worker holding the user's shard, and
a notice is local to one node's database, so servers, which ``LISTEN`` on the
coordinator (``store.feed.notify``), would never hear it. So:

- the trigger is dropped, in the transaction that distributes
  ``change_cursors`` (rather than kept with ``citus.enable_unsafe_triggers``:
  that setting would then be needed by every later DDL on the table, each
  shard would run a trigger whose notice nobody hears, and a rebalance must
  carry it along; the function ``mnemo_notify_change`` stays, unused);
- a write's change append (``store.feed.changes``) sees that the trigger is
  missing (looked up once per engine, at its first append) and sends
  ``SELECT pg_notify(...)`` itself, on its session, which is the
  coordinator's: the notice is delivered when the coordinator commits, to
  the ``LISTEN`` connections of every server. One statement more per write
  on Citus. When a write's transaction spans workers (two-phase commit), the
  workers' ``COMMIT PREPARED`` follows the coordinator's commit; a watch woken
  in between reads nothing new and gets the change at its next heartbeat
  (``--watch-heartbeat-seconds``): a notice never loses a change, at worst
  delays it.

Downgrading a distributed database is not supported (migration 0005's
downgrade expects the trigger; constraint changes of distributed tables are
limited by Citus): restore from a backup instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from mnemo_server.store.engine.engines import describe_url, migration_engine

__all__ = [
    "ANCHOR_TABLE",
    "DISTRIBUTION_COLUMN",
    "LOCAL_TABLES",
    "NOTIFY_TRIGGER",
    "REFERENCE_TABLES",
    "Distributed",
    "NotDistributable",
    "check_distributable",
    "distribute",
]

DISTRIBUTION_COLUMN = "user_id"
ANCHOR_TABLE = "users"
"""Distributed first; every other per-user table is co-located with it."""
REFERENCE_TABLES = frozenset({"app_states", "embedding_models", "user_erasures"})
"""Tables of no user, copied to every node (``tests/support/shard_audit.py`` lists the same)."""
LOCAL_TABLES = frozenset({"alembic_version"})
NOTIFY_TRIGGER = "change_cursors_notify"
_NOTIFY_TABLE = "change_cursors"
# The migrations' advisory lock (migrations/env.py, "mnemo" in ASCII), held
# for the whole run: a server migrating at start waits for it, and so does a
# second run.
_MIGRATION_LOCK = 0x6D6E656D6F


class NotDistributable(Exception):
    """The database cannot be distributed as it is; ``message`` says why and
    what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Distributed:
    """What ``distribute`` did: the tables it made reference tables and
    distributed tables now (in that order), and those that already were."""

    reference: tuple[str, ...]
    distributed: tuple[str, ...]
    unchanged: tuple[str, ...]
    citus_version: str

    @property
    def changed(self) -> bool:
        return bool(self.reference or self.distributed)


@dataclass(frozen=True)
class _Table:
    name: str
    per_user: bool
    citus_type: str | None  # citus_tables.citus_table_type: distributed, reference, local
    distribution_column: str | None
    colocation_id: int | None


def check_distributable(url: str) -> str:
    """Refuse early (``NotDistributable``) unless ``url`` is a PostgreSQL
    database with the ``citus`` extension; returns its version. Raises
    ``SQLAlchemyError`` when the database cannot be reached."""
    if make_url(url).get_backend_name() != "postgresql":
        raise NotDistributable(
            f"--distribute shards a PostgreSQL database over Citus; {describe_url(url)} "
            "is not PostgreSQL (SQLite is never sharded): drop --distribute, or point "
            "--database-url at the Citus coordinator"
        )
    engine = migration_engine(url)
    try:
        with engine.connect() as conn:
            return _citus_version(conn, url)
    finally:
        engine.dispose()


def distribute(url: str, *, shard_count: int | None = None) -> Distributed:
    """Distribute the tables of the database at ``url`` (see the module doc);
    ``shard_count``: of the new co-location group (default: the cluster's
    ``citus.shard_count``).

    Raises ``NotDistributable`` (not PostgreSQL, no ``citus`` extension, a
    table distributed otherwise or not known to be per-user or reference, or
    a statement Citus refused: the message names the table, Citus's error and
    that a new run continues from there) or ``SQLAlchemyError`` (the database
    cannot be reached).
    """
    check_distributable(url)
    engine = migration_engine(url)
    try:
        with engine.connect() as conn:
            version = _citus_version(conn, url)
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({_MIGRATION_LOCK})")
            conn.commit()
            try:
                return _distribute(conn, url, version, shard_count)
            finally:
                conn.rollback()
                conn.exec_driver_sql(f"SELECT pg_advisory_unlock({_MIGRATION_LOCK})")
                conn.commit()
    finally:
        engine.dispose()


def _citus_version(conn: Connection, url: str) -> str:
    version = conn.execute(
        text("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
    ).scalar_one_or_none()
    if version is None:
        raise NotDistributable(
            f"{describe_url(url)} has no citus extension: on a Citus cluster (citus in "
            "shared_preload_libraries on every node), run CREATE EXTENSION citus in this "
            "database on the coordinator and on each worker, add the workers "
            "(SELECT citus_add_node(host, port) on the coordinator), then run "
            "mnemo migrate --distribute again"
        )
    return str(version)


def _distribute(conn: Connection, url: str, version: str, shard_count: int | None) -> Distributed:
    tables = _tables(conn)
    conn.commit()
    if ANCHOR_TABLE not in tables:
        raise NotDistributable(
            f"{describe_url(url)} has no {ANCHOR_TABLE} table: run mnemo migrate first"
        )
    _refuse_unknown(tables.values())
    reference: list[str] = []
    distributed: list[str] = []
    unchanged: list[str] = []
    order = _order(tables, _foreign_keys(conn))
    for name in order:
        conn.commit()
        wanted = "reference" if name in REFERENCE_TABLES else "distributed"
        if tables[name].citus_type == wanted:
            unchanged.append(name)
            continue
        try:
            with conn.begin():
                _make(conn, name, shard_count)
        except DBAPIError as error:
            raise _refused(name, error) from error
        (reference if wanted == "reference" else distributed).append(name)
    _drop_local_copies(conn, order)
    return Distributed(tuple(reference), tuple(distributed), tuple(unchanged), version)


def _make(conn: Connection, name: str, shard_count: int | None) -> None:
    """Distribute ``name`` (or make it a reference table), in the caller's transaction."""
    if name in REFERENCE_TABLES:
        conn.execute(text("SELECT create_reference_table(:t)"), {"t": name})
    elif name == ANCHOR_TABLE:
        conn.execute(
            text(
                "SELECT create_distributed_table(:t, :c, colocate_with => 'none', "
                "shard_count => CAST(:n AS integer))"
            ),
            {"t": name, "c": DISTRIBUTION_COLUMN, "n": shard_count},
        )
    else:
        if name == _NOTIFY_TABLE:  # see the module doc
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {NOTIFY_TRIGGER} ON {_NOTIFY_TABLE}")
        conn.execute(
            text("SELECT create_distributed_table(:t, :c, colocate_with => :anchor)"),
            {"t": name, "c": DISTRIBUTION_COLUMN, "anchor": ANCHOR_TABLE},
        )


def _drop_local_copies(conn: Connection, order: Sequence[str]) -> None:
    """Citus copies a table's rows into its shards and keeps the originals,
    hidden, in the coordinator's table: empty those, once every table is
    distributed (a table's local rows cannot go while a local table still
    references it), children first. Also those a stopped run left."""
    for name in reversed(order):
        conn.commit()
        with conn.begin():
            size = conn.execute(
                text("SELECT pg_relation_size(CAST(:t AS regclass))"), {"t": name}
            ).scalar_one()
            if size:
                try:
                    conn.execute(
                        text("SELECT truncate_local_data_after_distributing_table(:t)"),
                        {"t": name},
                    )
                except DBAPIError as error:
                    raise _refused(name, error) from error


def _refused(table: str, error: DBAPIError) -> NotDistributable:
    detail = str(error.orig or error).strip()
    return NotDistributable(
        f"Citus refused to distribute {table}: {detail} (the tables before it are "
        "distributed; once the cause is fixed, mnemo migrate --distribute continues from it)"
    )


def _tables(conn: Connection) -> dict[str, _Table]:
    """The tables of the connection's schema (but the local ones), with
    whether they have a ``user_id`` column and how Citus holds them now
    (``pg_dist_partition``)."""
    rows = conn.execute(
        text(
            """
            SELECT c.relname AS name,
                   EXISTS (SELECT 1 FROM pg_attribute a
                           WHERE a.attrelid = c.oid AND a.attname = :column
                             AND NOT a.attisdropped) AS per_user,
                   p.partmethod AS method,
                   p.repmodel AS replication,
                   column_to_column_name(p.logicalrelid, p.partkey) AS distribution_column,
                   p.colocationid AS colocation_id
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
            WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
            ORDER BY c.relname
            """
        ),
        {"column": DISTRIBUTION_COLUMN},
    ).all()
    return {
        row.name: _Table(
            row.name,
            bool(row.per_user),
            _citus_type(row.method, row.replication, row.distribution_column),
            row.distribution_column,
            None if row.colocation_id is None else int(row.colocation_id),
        )
        for row in rows
        if row.name not in LOCAL_TABLES
    }


def _citus_type(method: str | None, replication: str | None, column: str | None) -> str | None:
    """As ``citus_tables.citus_table_type`` (which also sums the shards'
    sizes on every worker: too slow to ask here)."""
    if method is None:
        return None
    if column is not None:
        return "distributed"
    return "reference" if replication == "t" else "local"


def _refuse_unknown(tables: Iterable[_Table]) -> None:
    """Every table is per-user or a known reference table, and not already
    held by Citus some other way; checked before anything changes."""
    listed = list(tables)
    anchor_group = next(
        (t.colocation_id for t in listed if t.name == ANCHOR_TABLE and t.citus_type), None
    )
    problems: list[str] = []
    for table in listed:
        if table.name in REFERENCE_TABLES:
            if table.citus_type not in (None, "reference"):
                problems.append(f"{table.name} is a {table.citus_type} table, not a reference one")
        elif not table.per_user:
            problems.append(
                f"{table.name} has no {DISTRIBUTION_COLUMN} column and is not a reference table "
                "Mnemo knows (another application's table? keep Mnemo in a database of its own)"
            )
        elif table.citus_type == "distributed":
            if table.distribution_column != DISTRIBUTION_COLUMN:
                problems.append(
                    f"{table.name} is distributed by {table.distribution_column}, "
                    f"not {DISTRIBUTION_COLUMN}"
                )
            elif anchor_group is not None and table.colocation_id != anchor_group:
                problems.append(f"{table.name} is not co-located with {ANCHOR_TABLE}")
        elif table.citus_type is not None:
            problems.append(f"{table.name} is a Citus {table.citus_type} table")
    if problems:
        raise NotDistributable(
            "cannot distribute this database as Mnemo needs it: " + "; ".join(problems)
        )


def _foreign_keys(conn: Connection) -> list[tuple[str, str]]:
    """(referencing table, referenced table) of every foreign key between two
    tables of the connection's schema."""
    rows = conn.execute(
        text(
            """
            SELECT child.relname AS child, parent.relname AS parent
            FROM pg_constraint k
            JOIN pg_class child ON child.oid = k.conrelid
            JOIN pg_class parent ON parent.oid = k.confrelid
            JOIN pg_namespace n ON n.oid = child.relnamespace
            WHERE k.contype = 'f' AND n.nspname = current_schema()
            """
        )
    ).all()
    return [(str(row.child), str(row.parent)) for row in rows]


def _order(tables: Mapping[str, _Table], foreign_keys: Sequence[tuple[str, str]]) -> list[str]:
    """The reference tables, then ``users``, then the other per-user tables,
    each after every table it references (by name within a level)."""
    parents: dict[str, set[str]] = {name: set() for name in tables}
    for child, parent in foreign_keys:
        if child in parents and parent in parents and child != parent:
            parents[child].add(parent)
    for name in tables:  # co-located with the anchor: after it
        if name != ANCHOR_TABLE and name not in REFERENCE_TABLES:
            parents[name].add(ANCHOR_TABLE)
    rank = {
        name: (0 if name in REFERENCE_TABLES else 1 if name == ANCHOR_TABLE else 2)
        for name in tables
    }
    order: list[str] = []
    placed: set[str] = set()
    while len(order) < len(tables):
        ready = sorted(
            (rank[name], name) for name in tables if name not in placed and parents[name] <= placed
        )
        if not ready:
            cycle = sorted(set(tables) - placed)
            raise NotDistributable(
                f"the foreign keys of {', '.join(cycle)} form a cycle: no order distributes them"
            )
        name = ready[0][1]
        order.append(name)
        placed.add(name)
    return order
