"""Engines for Mnemo's databases: URL normalization, pools, and the SQLite
connection settings (WAL, pragmas, who issues BEGIN)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import NullPool

__all__ = [
    "SQLITE_BUSY_TIMEOUT_MS",
    "SQLITE_SYNCHRONOUS",
    "WRITE_OPTION",
    "create_sync_engine",
    "describe_url",
    "migration_engine",
    "normalize_url",
    "read_options",
    "sqlite_file",
]

SQLITE_BUSY_TIMEOUT_MS = 5000
# FULL, not NORMAL: in WAL mode NORMAL already survives a crash of this
# process, but a commit acknowledged to a remote client could still be lost
# to a power failure or an OS crash. FULL syncs the WAL at each commit, which
# matches what PostgreSQL (synchronous_commit=on) promises for the same call:
# an acknowledged write is on disk. It costs one fsync per write transaction.
SQLITE_SYNCHRONOUS = "FULL"
# Execution option marking an engine whose transactions write: on SQLite they
# begin with BEGIN IMMEDIATE (the write lock up front).
WRITE_OPTION = "mnemo_write"


def read_options(dialect: str) -> dict[str, Any]:
    """Execution options of read transactions: every statement of one read
    sees the same snapshot (a SQLite read transaction always does; on
    PostgreSQL, REPEATABLE READ, which a read-only transaction gets without
    any risk of serialization failures)."""
    if dialect == "postgresql":
        return {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
    return {}


def normalize_url(url: str | URL) -> URL:
    """The SQLAlchemy URL with the driver Mnemo uses.

    ``sqlite:///path`` becomes ``sqlite+pysqlite`` with an absolute path;
    ``postgres://``, ``postgresql://`` become ``postgresql+psycopg``.
    Raises ``ValueError`` for other databases and for in-memory SQLite (each
    connection would see its own empty database).
    """
    parsed = make_url(url) if isinstance(url, str) else url
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.drivername not in ("sqlite", "sqlite+pysqlite"):
            raise ValueError(f"unsupported SQLite driver {parsed.drivername!r}")
        if not parsed.database or parsed.database == ":memory:" or "mode=memory" in str(parsed):
            raise ValueError("an in-memory SQLite database cannot be shared: name a file")
        path = Path(parsed.database).expanduser().absolute()
        return parsed.set(drivername="sqlite+pysqlite", database=str(path))
    if backend in ("postgresql", "postgres"):
        if parsed.drivername not in ("postgres", "postgresql", "postgresql+psycopg"):
            raise ValueError(
                f"unsupported PostgreSQL driver {parsed.drivername!r}: use postgresql+psycopg://"
            )
        return parsed.set(drivername="postgresql+psycopg")
    raise ValueError(
        f"unsupported database {parsed.drivername!r}: use sqlite:///path or postgresql://..."
    )


def sqlite_file(url: str | URL) -> Path | None:
    """The absolute path of a SQLite URL's file (which may not exist yet);
    ``None`` for PostgreSQL. Raises ``ValueError`` as ``normalize_url``."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    return Path(parsed.database or "")


def describe_url(url: str | URL) -> str:
    """``"sqlite /abs/path"`` or ``"postgresql host:port/db"``: never a password."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        return f"sqlite {parsed.database}"
    return f"postgresql {parsed.host or 'localhost'}:{parsed.port or 5432}/{parsed.database or ''}"


def _configure_sqlite(engine: Engine) -> None:
    """WAL, pragmas, and SQLAlchemy in charge of BEGIN (SQLAlchemy's recipe
    for sqlite3: the driver's own implicit BEGIN is disabled)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
            # Deleted content is overwritten with zeros (a deleted memory's text
            # must not survive in free pages of the file).
            cursor.execute("PRAGMA secure_delete=ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(WRITE_OPTION, False)
        # On the driver connection: SQLAlchemy's statement machinery costs
        # more than the BEGIN itself, on every transaction.
        conn.connection.dbapi_connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")  # type: ignore[union-attr]


# Prepared statements each connection keeps (sqlite3's statement cache,
# psycopg's prepared statements): more than the store's distinct statements,
# so that none is prepared twice (the drivers' defaults are 128 and 100).
PREPARED_STATEMENTS = 512


def _engine_options(url: URL, pool_size: int) -> dict[str, Any]:
    options: dict[str, Any] = {"pool_size": pool_size, "max_overflow": 0, "pool_timeout": 30}
    if url.get_backend_name() == "postgresql":
        options |= {
            "pool_pre_ping": True,
            "isolation_level": "READ COMMITTED",
            "connect_args": {"connect_timeout": 10, "application_name": "mnemo"},
        }
    else:
        options["connect_args"] = {"cached_statements": PREPARED_STATEMENTS}
    return options


def create_sync_engine(url: str | URL, *, pool_size: int = 10) -> Engine:
    """A configured sync engine with a pool of ``pool_size`` connections."""
    parsed = normalize_url(url)
    return _sync_engine(parsed, **_engine_options(parsed, pool_size))


def migration_engine(url: str | URL) -> Engine:
    """A configured sync engine without a pool whose transactions are write
    transactions (on SQLite, a second migrating process waits for the first)."""
    parsed = normalize_url(url)
    options = _engine_options(parsed, 1)
    for key in ("pool_size", "max_overflow", "pool_timeout"):
        del options[key]
    engine = _sync_engine(parsed, poolclass=NullPool, **options)
    return engine.execution_options(**{WRITE_OPTION: True})


def _sync_engine(url: URL, **options: Any) -> Engine:
    _prepare_sqlite_directory(url)
    engine = create_engine(url, **options)
    if url.get_backend_name() == "sqlite":
        _configure_sqlite(engine)
    else:

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.prepared_max = PREPARED_STATEMENTS

    return engine


def _prepare_sqlite_directory(url: URL) -> None:
    if url.get_backend_name() == "sqlite":
        Path(url.database or "").parent.mkdir(parents=True, exist_ok=True)
