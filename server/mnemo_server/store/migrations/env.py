"""Alembic environment: run by ``mnemo_server.store.migrate`` (no alembic.ini).

The caller puts the database URL in ``config.attributes["url"]`` (or an open
``Connection`` in ``config.attributes["connection"]``). SQLite migrations run
in batch mode, so later revisions can alter tables SQLite cannot ALTER.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from mnemo_server.store.engine.engines import migration_engine
from mnemo_server.store.schema import include_name, include_object_on, metadata

# Key of the PostgreSQL advisory lock held while migrating ("mnemo" in ASCII).
_MIGRATION_LOCK = 0x6D6E656D6F


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        # Objects created by raw SQL (the full-text index) are not in the metadata.
        include_name=include_name,
        include_object=include_object_on(connection.dialect.name),
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Two servers starting at once: the second waits, then sees head.
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        context.run_migrations()


def run_migrations_online() -> None:
    attributes = context.config.attributes
    connection: Connection | None = attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = migration_engine(attributes["url"])
    try:
        with engine.connect() as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; give a database URL")
run_migrations_online()
