"""A throwaway Citus cluster for the test suite: a coordinator and workers on 127.0.0.1.

Citus is not part of this repository: ``MNEMO_TEST_CITUS_BINDIR`` names the
``bin`` directory of a PostgreSQL into which Citus is installed (the library citus.so
in its ``pg_config --pkglibdir``), e.g. ``/usr/lib/postgresql/15/bin``.
Without it, ``find_citus_bindir`` raises ``CitusUnavailable`` saying so::

    with CitusCluster(workers=2) as cluster:
        cluster.create_database("t1")     # on every node, workers registered
        url = cluster.database_url("t1")  # the coordinator's (SQLAlchemy URL)

Each node is a ``ThrowawayPostgres`` (``tests.support.pgcluster``: initdb,
a free port, the ``postgres`` OS user when run as root) with Citus loaded
(``SETTINGS``). Citus keeps its metadata (nodes, shards) per database, and
connects to a worker's database of the same name as the coordinator's, so a
database of the cluster is one database of that name on every node:
``create_database`` makes it (``CREATE EXTENSION citus`` on each node,
``citus_set_coordinator_host`` and ``citus_add_node`` on the coordinator).

Per-test databases (``CitusDatabases``) are copies, made with ``CREATE
DATABASE ... TEMPLATE`` on every node under the same name, of a template
migrated and distributed once: the coordinator's copy has the same
metadata, naming the same nodes and shards, and each worker's copy holds
those shards. A template must have no session, but Citus's maintenance
daemon stays connected to every database with the extension, so
``freeze`` first forbids new connections to it (``ALLOW_CONNECTIONS
false``: the daemon cannot come back) and ends its sessions.

``add_worker`` starts one more node and adds it to given databases;
``rebalance`` moves shards onto it (``citus_rebalance_start``, waited for).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import psycopg
from psycopg import sql

from tests.support.mnemo_command import run_mnemo
from tests.support.pgcluster import (
    PostgresUnavailable,
    ThrowawayPostgres,
    database_url,
    libpq_url,
)

__all__ = [
    "BINDIR_ENV",
    "SETTINGS",
    "CitusCluster",
    "CitusDatabases",
    "CitusUnavailable",
    "find_citus_bindir",
]

BINDIR_ENV = "MNEMO_TEST_CITUS_BINDIR"
HOST = "127.0.0.1"

SETTINGS: Mapping[str, str] = {
    "shared_preload_libraries": "citus",
    # Writes of users on different workers in one transaction (group commit)
    # commit in two phases.
    "max_prepared_transactions": "200",
    # Shard moves (rebalance) copy by logical replication.
    "wal_level": "logical",
    # Each session of the coordinator may hold several connections per worker.
    "max_connections": "300",
    # Shard moves' replication slots, and the coordinator's own connections.
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    # No call home (Citus's daily usage report) from a throwaway cluster.
    "citus.enable_statistics_collection": "off",
}
"""Server settings of every node (on top of ``pgcluster.DEFAULT_SETTINGS``)."""

SHARD_COUNT = 4
"""Shards per distributed table in the tests' databases (Citus's default 32
would make each database copy hold some 700 tables per worker)."""

_NO_SESSIONS_TIMEOUT_S = 30.0
_REBALANCE_TIMEOUT_S = 300.0


class CitusUnavailable(PostgresUnavailable):
    """No Citus installation was given, or it cannot be used."""


def find_citus_bindir() -> Path:
    """``$MNEMO_TEST_CITUS_BINDIR``, checked: PostgreSQL's server programs and
    Citus installed for them. Raises ``CitusUnavailable`` saying what to do."""
    given = os.environ.get(BINDIR_ENV)
    if not given:
        raise CitusUnavailable(
            f"no Citus installation given: set {BINDIR_ENV} to the bin directory of a "
            "PostgreSQL with Citus installed (e.g. /usr/lib/postgresql/15/bin, with "
            "citus.so in its pg_config --pkglibdir; Citus is not built by this repository)"
        )
    bindir = Path(given)
    missing = [tool for tool in ("initdb", "pg_ctl", "postgres") if not (bindir / tool).is_file()]
    if missing:
        raise CitusUnavailable(f"{BINDIR_ENV}={given} has no {', '.join(missing)}")
    libdir = _pkglibdir(bindir)
    if not (libdir / "citus.so").is_file():
        raise CitusUnavailable(
            f"{BINDIR_ENV}={given}: Citus is not installed for this PostgreSQL "
            f"(no citus.so in {libdir})"
        )
    return bindir


def _pkglibdir(bindir: Path) -> Path:
    pg_config = bindir / "pg_config"
    if pg_config.is_file():
        done = subprocess.run(
            [str(pg_config), "--pkglibdir"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip())
    return bindir.parent / "lib"  # Debian's layout: /usr/lib/postgresql/<v>/{bin,lib}


def _connect(url: str) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(libpq_url(url), autocommit=True)


class CitusCluster:
    """A coordinator and ``workers`` workers (see the module doc). Use as a
    context manager, or ``start()`` and ``stop()``."""

    def __init__(
        self,
        *,
        workers: int = 2,
        bindir: Path | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self._bindir = bindir
        self._settings = {**SETTINGS, **(settings or {})}
        self._worker_count = workers
        self._nodes: list[ThrowawayPostgres] = []
        self.version: str | None = None
        self.citus_version: str | None = None

    # -- the nodes

    @property
    def coordinator(self) -> ThrowawayPostgres:
        if not self._nodes:
            raise RuntimeError("CitusCluster is not started")
        return self._nodes[0]

    @property
    def workers(self) -> Sequence[ThrowawayPostgres]:
        return tuple(self._nodes[1:])

    @property
    def nodes(self) -> Sequence[ThrowawayPostgres]:
        return tuple(self._nodes)

    @property
    def url(self) -> str:
        """The coordinator's ``postgres`` database (SQLAlchemy URL)."""
        return self.coordinator.url

    def database_url(self, name: str) -> str:
        """The coordinator's database ``name``: what a server is given."""
        return database_url(self.coordinator.url, name)

    def start(self) -> Self:
        if self._nodes:
            return self
        bindir = self._bindir = self._bindir or find_citus_bindir()
        try:
            for _ in range(1 + self._worker_count):
                self._nodes.append(self._new_node(bindir))
            with _connect(self.coordinator.url) as conn:
                row = conn.execute(
                    "SELECT default_version FROM pg_available_extensions WHERE name = 'citus'"
                ).fetchone()
            if row is None:
                raise CitusUnavailable(f"{bindir}: the citus extension is not available")
            self.citus_version = str(row[0])
            self.version = self.coordinator.version
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        nodes, self._nodes = self._nodes, []
        for node in reversed(nodes):
            with contextlib.suppress(Exception):
                node.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _new_node(self, bindir: Path) -> ThrowawayPostgres:
        node = ThrowawayPostgres(bindir=bindir, settings=self._settings)
        node.start()
        if node.external:
            node.stop()
            raise CitusUnavailable(
                "MNEMO_TEST_POSTGRES_URL is set: a Citus cluster needs servers of its own; "
                "unset it for the Citus tests"
            )
        return node

    # -- databases

    def create_database(
        self, name: str, *, template: str | None = None, nodes: Sequence[ThrowawayPostgres] = ()
    ) -> str:
        """Make database ``name`` on every node (or ``nodes``); returns its
        coordinator URL. From ``template`` (a database of this cluster,
        ``freeze``-d): a copy on each node. Otherwise new: the extension on
        each node, then the coordinator and the workers registered."""
        targets = list(nodes) or list(self._nodes)
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement = sql.SQL("{} TEMPLATE {} STRATEGY FILE_COPY").format(
                statement, sql.Identifier(template)
            )
        for node in targets:
            with _connect(node.url) as conn:
                conn.execute(statement)
        if template is None:
            for node in targets:
                with _connect(database_url(node.url, name)) as conn:
                    conn.execute("CREATE EXTENSION citus")
            self._register(name, [node for node in targets if node is not self.coordinator])
        return self.database_url(name)

    def _register(self, name: str, workers: Sequence[ThrowawayPostgres]) -> None:
        with _connect(self.database_url(name)) as conn:
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", (HOST, self.coordinator.port))
            for worker in workers:
                conn.execute("SELECT citus_add_node(%s, %s)", (HOST, worker.port))

    def drop_database(self, name: str) -> None:
        """Drop database ``name`` wherever it is, the coordinator first (its
        sessions hold connections to the workers): no new connection to it,
        then ``DROP DATABASE ... WITH (FORCE)``, again while a session that
        was told to end is still there (a busy machine)."""
        for node in self._nodes:
            with _connect(node.url) as conn:
                if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                    conn.execute(
                        sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(
                            sql.Identifier(name)
                        )
                    )
                    _drop(conn, name)

    def freeze(self, name: str) -> None:
        """Make database ``name`` usable as a template: no new connection to
        it on any node, and none left (Citus's maintenance daemons included)."""
        statement = sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(
            sql.Identifier(name)
        )
        for node in self._nodes:
            with _connect(node.url) as conn:
                conn.execute(statement)
        for node in self._nodes:  # the coordinator first: it holds the others'
            with _connect(node.url) as conn:
                _end_sessions(conn, name)

    def migrate_and_distribute(self, name: str, *, shard_count: int = SHARD_COUNT) -> str:
        """``mnemo migrate --distribute`` on database ``name``, in a
        subprocess as an operator runs it (the setting citus.shard_count through
        ``PGOPTIONS``); returns its output. Raises ``RuntimeError`` if it failed."""
        done = run_mnemo(
            "migrate",
            "--distribute",
            "--database-url",
            self.database_url(name),
            env={"PGOPTIONS": f"-c citus.shard_count={shard_count}"},
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"mnemo migrate --distribute exited {done.returncode}:\n{done.stdout}{done.stderr}"
            )
        return done.stdout

    # -- growing the cluster

    def add_worker(self, databases: Sequence[str]) -> ThrowawayPostgres:
        """Start one more worker and add it to ``databases`` (each made on it
        with the extension, then ``citus_add_node`` in the coordinator's). It
        holds no shard until ``rebalance``."""
        bindir = self._bindir or find_citus_bindir()
        node = self._new_node(bindir)
        self._nodes.append(node)
        for name in databases:
            with _connect(node.url) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            with _connect(database_url(node.url, name)) as conn:
                conn.execute("CREATE EXTENSION citus")
            with _connect(self.database_url(name)) as conn:
                conn.execute("SELECT citus_add_node(%s, %s)", (HOST, node.port))
        return node

    def rebalance(self, name: str, *, mode: str = "auto") -> None:
        """Spread the shards of database ``name`` evenly over its workers:
        ``citus_rebalance_start`` (background shard moves; ``mode``: Citus's
        ``shard_transfer_mode``, ``auto`` copies by logical replication while
        writes go on, ``block_writes`` blocks them), then wait for the job
        (``citus_rebalance_wait``). Raises ``RuntimeError`` if it failed."""
        with _connect(self.database_url(name)) as conn:
            conn.execute(
                "SELECT citus_rebalance_start(shard_transfer_mode => %s::citus.shard_transfer_mode)",
                (mode,),
            )
            timeout = str(int(_REBALANCE_TIMEOUT_S * 1000))
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (timeout,))
            conn.execute("SELECT citus_rebalance_wait()")
            row = conn.execute(
                "SELECT state FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1"
            ).fetchone()
        if row is not None and str(row[0]) != "finished":
            raise RuntimeError(f"the rebalance of {name} ended {row[0]}")

    def shards_per_node(self, name: str) -> dict[int, int]:
        """Shard placements of database ``name`` per node port."""
        with _connect(self.database_url(name)) as conn:
            rows = conn.execute(
                "SELECT nodeport, count(*) FROM citus_shards GROUP BY nodeport"
            ).fetchall()
        return {int(port): int(count) for port, count in rows}


def _drop(conn: psycopg.Connection[tuple[Any, ...]], name: str) -> None:
    statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    deadline = time.monotonic() + _NO_SESSIONS_TIMEOUT_S
    while True:
        try:
            conn.execute(statement)
            return
        except psycopg.errors.ObjectInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _end_sessions(conn: psycopg.Connection[tuple[Any, ...]], name: str) -> None:
    """End every session of database ``name`` on ``conn``'s server and wait
    until there is none (``ALLOW_CONNECTIONS false`` keeps new ones out)."""
    deadline = time.monotonic() + _NO_SESSIONS_TIMEOUT_S
    while True:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
        if row is None or int(row[0]) == 0:
            return
        if time.monotonic() > deadline:
            raise CitusUnavailable(f"the sessions of database {name} did not end")
        time.sleep(0.05)


class CitusDatabases:
    """Fresh databases of a ``CitusCluster``, as ``tests.support.databases.
    PostgresDatabases`` gives them: ``fresh()`` migrated and distributed,
    ``empty()`` with the extension and the nodes but no table; both copies
    of templates made once (see the module doc)."""

    def __init__(self, cluster: CitusCluster, *, shard_count: int = SHARD_COUNT) -> None:
        self._cluster = cluster
        # The nodes of the templates (a worker added later holds no copy).
        self._nodes = cluster.nodes
        self._prefix = f"mnemo_citus_{os.getpid()}"
        self._names = itertools.count()
        self._empty = f"{self._prefix}_empty"
        self._template = f"{self._prefix}_template"
        for name in (self._template, self._empty):
            cluster.drop_database(name)
        cluster.create_database(self._empty)
        cluster.freeze(self._empty)
        cluster.create_database(self._template, template=self._empty)
        cluster.migrate_and_distribute(self._template, shard_count=shard_count)
        cluster.freeze(self._template)

    @property
    def cluster(self) -> CitusCluster:
        return self._cluster

    def fresh(self) -> str:
        """The coordinator URL of a new migrated, distributed database (drop
        it with ``drop``)."""
        return self._copy(self._template)

    def empty(self) -> str:
        """The coordinator URL of a new database without any table (the
        extension and the nodes are there)."""
        return self._copy(self._empty)

    def _copy(self, template: str) -> str:
        name = f"{self._prefix}_{next(self._names)}"
        return self._cluster.create_database(name, template=template, nodes=self._nodes)

    def drop(self, url: str) -> None:
        self._cluster.drop_database(url.rsplit("/", 1)[1])

    def close(self) -> None:
        for name in (self._template, self._empty):
            self._cluster.drop_database(name)
