"""Fresh, migrated databases for tests, fast.

Migrating costs far more than copying, so each backend migrates once per
test session into a template and hands every test a copy:

- SQLite: the template is a migrated file; a test gets a copy of it.
- PostgreSQL: the template is a migrated database on the session's server;
  a test gets ``CREATE DATABASE ... TEMPLATE`` of it, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import sql

from mnemo_server.store import migrate
from mnemo_server.store.transactions.database import Database, open_database
from tests.support.pgcluster import create_database, database_url, drop_database, libpq_url

__all__ = ["PostgresDatabases", "SqliteDatabases", "opened_database"]

_SQLITE_FILE = "mnemo.db"


class SqliteDatabases:
    """Migrated SQLite files, copied from one migrated template file."""

    def __init__(self, template_dir: Path) -> None:
        self._template = template_dir / _SQLITE_FILE
        migrate.upgrade(self.url(self._template))
        # The last connection closed checkpointed the WAL into the file.
        if Path(f"{self._template}-wal").exists():
            raise RuntimeError(f"{self._template} still has a WAL after migrating")

    @staticmethod
    def url(path: Path) -> str:
        return f"sqlite:///{path}"

    def fresh(self, directory: Path) -> str:
        """The URL of a new migrated database file in ``directory``."""
        path = directory / _SQLITE_FILE
        shutil.copyfile(self._template, path)
        return self.url(path)

    def empty(self, directory: Path) -> str:
        """The URL of a database file that does not exist yet."""
        return self.url(directory / "empty.db")


class PostgresDatabases:
    """Databases on one PostgreSQL server, created from a migrated template."""

    def __init__(self, server_url: str) -> None:
        self._server_url = server_url
        self._prefix = f"mnemo_test_{os.getpid()}"
        self._names = itertools.count()
        self._template = f"{self._prefix}_template"
        drop_database(server_url, self._template)
        create_database(server_url, self._template)
        migrate.upgrade(database_url(server_url, self._template))
        with psycopg.connect(libpq_url(server_url)) as conn:
            self._server_version: int = conn.info.server_version

    def fresh(self) -> str:
        """The URL of a new migrated database (drop it with ``drop``)."""
        name = f"{self._prefix}_{next(self._names)}"
        statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(self._template)
        )
        if self._server_version >= 150000:
            # Copying the files is about twice as fast as WAL-logging them.
            statement = sql.SQL("{} STRATEGY FILE_COPY").format(statement)
        with psycopg.connect(libpq_url(self._server_url), autocommit=True) as conn:
            conn.execute(statement)
        return database_url(self._server_url, name)

    def empty(self) -> str:
        """The URL of a new database without any table."""
        name = f"{self._prefix}_{next(self._names)}"
        create_database(self._server_url, name)
        return database_url(self._server_url, name)

    def drop(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        drop_database(self._server_url, name)

    def close(self) -> None:
        drop_database(self._server_url, self._template)


def opened_database(url: str, loop: asyncio.AbstractEventLoop) -> Iterator[Database]:
    """For a fixture: ``url`` opened, closed on ``loop`` (the test's) afterwards."""
    db = open_database(url)
    try:
        yield db
    finally:
        loop.run_until_complete(db.close())
