"""Shared fixtures: backends, fresh migrated databases, and ``async def`` tests.

- ``backend``: ``"sqlite"`` or ``"postgres"`` (ids ``sqlite``/``postgres``,
  marks ``pytest.mark.sqlite``/``pytest.mark.postgres``). A test that uses it,
  directly or through ``database_url``/``database``, runs once per backend.
- ``database_url``: a fresh, migrated database of the current backend.
- ``database``: that database opened (runner ``"thread"``), closed afterwards.
- PostgreSQL is a session-wide throwaway cluster (or ``$MNEMO_TEST_POSTGRES_URL``),
  started only when the first PostgreSQL test runs.
- ``MNEMO_TEST_BACKENDS`` (comma-separated, default ``sqlite,postgres``) picks
  the backends. ``citus`` (``make test-citus``) serves the PostgreSQL tests
  from a throwaway Citus cluster instead (``tests.support.citus``: a
  coordinator and two workers from ``$MNEMO_TEST_CITUS_BINDIR``; every fresh
  database migrated and distributed by user): the test id says ``citus``, the
  value stays ``"postgres"`` (Citus is PostgreSQL to the server), and
  ``postgres_server``/``postgres_databases`` are the coordinator and its
  databases, so tests pinned to PostgreSQL run on Citus too; tests/citus
  is collected only then. Without ``$MNEMO_TEST_CITUS_BINDIR`` they skip, saying so.
- ``async def`` tests run on the test's own event loop (``event_loop``), the
  loop that function-scoped fixtures such as ``database`` are bound to.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from mnemo_server.store.transactions.database import Database
from tests.support.citus import CitusCluster, CitusDatabases, CitusUnavailable
from tests.support.databases import PostgresDatabases, SqliteDatabases, opened_database
from tests.support.pgcluster import ThrowawayPostgres

BACKENDS_ENV = "MNEMO_TEST_BACKENDS"
_PARAMS = {
    "sqlite": pytest.param("sqlite", id="sqlite", marks=pytest.mark.sqlite),
    "postgres": pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    "citus": pytest.param("postgres", id="citus", marks=[pytest.mark.postgres, pytest.mark.citus]),
}


def _backends() -> list[str]:
    names = [n.strip() for n in os.environ.get(BACKENDS_ENV, "sqlite,postgres").split(",")]
    names = [n for n in names if n]
    unknown = sorted(set(names) - set(_PARAMS))
    if unknown or not names or {"postgres", "citus"} <= set(names):
        raise pytest.UsageError(
            f"{BACKENDS_ENV}={os.environ.get(BACKENDS_ENV)!r}: a comma-separated list of "
            "sqlite, postgres, citus (postgres or citus, not both)"
        )
    return names


_SELECTED = _backends()
BACKENDS = [_PARAMS[name] for name in _SELECTED]
CITUS = "citus" in _SELECTED
"""The PostgreSQL tests run on Citus (``make test-citus``)."""
collect_ignore = [] if CITUS else ["citus"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "citus: test runs against a Citus cluster (MNEMO_TEST_BACKENDS=citus)"
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    if not CITUS:
        return None
    bindir = os.environ.get("MNEMO_TEST_CITUS_BINDIR") or "(none: MNEMO_TEST_CITUS_BINDIR unset)"
    return f"citus: the PostgreSQL tests on a throwaway Citus cluster from {bindir}"


# ----------------------------------------------------------- async tests


@pytest.fixture
def event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The event loop of one test (its ``async def`` body and its fixtures)."""
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.fixturenames.append("event_loop")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    loop = cast(asyncio.AbstractEventLoop, pyfuncitem.funcargs["event_loop"])
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    loop.run_until_complete(pyfuncitem.obj(**kwargs))
    return True


# ------------------------------------------------------------- databases


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[CitusCluster]:
    """A coordinator and two workers (skips, saying why, without Citus)."""
    try:
        cluster = CitusCluster().start()
    except CitusUnavailable as error:
        pytest.skip(str(error))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_server(request: pytest.FixtureRequest) -> Iterator[ThrowawayPostgres]:
    if CITUS:
        cluster: CitusCluster = request.getfixturevalue("citus_cluster")
        yield cluster.coordinator
        return
    with ThrowawayPostgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_databases(
    postgres_server: ThrowawayPostgres, request: pytest.FixtureRequest
) -> Iterator[PostgresDatabases | CitusDatabases]:
    databases: PostgresDatabases | CitusDatabases
    if CITUS:
        databases = CitusDatabases(request.getfixturevalue("citus_cluster"))
    else:
        databases = PostgresDatabases(postgres_server.url)
    try:
        yield databases
    finally:
        databases.close()


@pytest.fixture(scope="session")
def sqlite_databases(tmp_path_factory: pytest.TempPathFactory) -> SqliteDatabases:
    return SqliteDatabases(tmp_path_factory.mktemp("sqlite-template"))


def _new_database(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, *, migrated: bool
) -> Iterator[str]:
    if backend == "sqlite":
        sqlite: SqliteDatabases = request.getfixturevalue("sqlite_databases")
        yield sqlite.fresh(tmp_path) if migrated else sqlite.empty(tmp_path)
        return
    postgres: PostgresDatabases | CitusDatabases = request.getfixturevalue("postgres_databases")
    url = postgres.fresh() if migrated else postgres.empty()
    try:
        yield url
    finally:
        postgres.drop(url)


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database of ``backend``."""
    yield from _new_database(backend, request, tmp_path, migrated=True)


@pytest.fixture
def empty_database_url(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[str]:
    """A database of ``backend`` without any table (never migrated)."""
    yield from _new_database(backend, request, tmp_path, migrated=False)


@pytest.fixture
def database(database_url: str, event_loop: asyncio.AbstractEventLoop) -> Iterator[Database]:
    """The fresh database, opened with the thread runner."""
    yield from opened_database(database_url, event_loop)
