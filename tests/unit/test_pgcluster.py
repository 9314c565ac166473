"""The throwaway PostgreSQL harness (tests.support.pgcluster) works."""

from __future__ import annotations

import psycopg
import pytest

from tests.support.pgcluster import (
    ThrowawayPostgres,
    create_database,
    database_url,
    drop_database,
    libpq_url,
)

pytestmark = pytest.mark.postgres


def _databases(url: str) -> set[str]:
    with psycopg.connect(libpq_url(url)) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


def test_throwaway_postgres_serves_queries_and_databases() -> None:
    with ThrowawayPostgres() as pg:
        assert pg.url.startswith("postgresql+psycopg://")
        with psycopg.connect(libpq_url(pg.url)) as conn:
            row = conn.execute("SELECT version()").fetchone()
        assert row is not None
        assert str(row[0]).startswith("PostgreSQL ")

        name = "mnemo_pgcluster_selftest"
        drop_database(pg.url, name)  # in case an external server kept one
        create_database(pg.url, name)
        try:
            assert name in _databases(pg.url)
            with psycopg.connect(libpq_url(database_url(pg.url, name))) as conn:
                conn.execute("CREATE TABLE t (x int)")
                conn.execute("INSERT INTO t VALUES (1)")
            copy = f"{name}_copy"
            create_database(pg.url, copy, template=name)
            try:
                with psycopg.connect(libpq_url(database_url(pg.url, copy))) as conn:
                    assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
            finally:
                drop_database(pg.url, copy)
        finally:
            drop_database(pg.url, name)
        assert name not in _databases(pg.url)

        data_dir = pg.data_dir
    if data_dir is not None:  # a throwaway cluster (not MNEMO_TEST_POSTGRES_URL)
        assert not data_dir.exists(), "the cluster's directory is removed on exit"
