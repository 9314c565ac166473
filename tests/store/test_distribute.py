"""``mnemo migrate --distribute`` refuses, before changing anything, a
database it cannot shard: SQLite, and PostgreSQL without the citus
extension. (What it does on Citus: tests/citus, ``make test-citus``.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.mnemo_command import run_mnemo
from tests.support.pgcluster import (
    ThrowawayPostgres,
    create_database,
    database_url,
    drop_database,
    libpq_url,
)

EXIT_USAGE = 2


def test_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "mnemo.db"
    done = run_mnemo("migrate", "--distribute", "--database-url", f"sqlite:///{path}")
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "is not PostgreSQL" in done.stderr
    assert "drop --distribute" in done.stderr
    assert not path.exists()


@pytest.fixture
def plain_database(postgres_server: ThrowawayPostgres) -> Iterator[str]:
    """A new database without the citus extension (on Citus runs too: the
    coordinator's, never given the extension)."""
    name = f"mnemo_plain_{uuid.uuid4().hex[:12]}"
    create_database(postgres_server.url, name)
    try:
        yield database_url(postgres_server.url, name)
    finally:
        drop_database(postgres_server.url, name)


@pytest.mark.postgres
def test_postgres_without_citus_is_refused_and_left_unmigrated(plain_database: str) -> None:
    done = run_mnemo("migrate", "--distribute", "--database-url", plain_database)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "has no citus extension" in done.stderr
    assert "CREATE EXTENSION citus" in done.stderr
    with psycopg.connect(libpq_url(plain_database)) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone()
    assert tables == (0,)
