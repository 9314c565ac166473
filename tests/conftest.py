"""Shared fixtures: backends, fresh migrated databases, and ``async def`` tests.

- ``backend``: ``"sqlite"`` or ``"postgres"`` (ids ``sqlite``/``postgres``,
  marks ``pytest.mark.sqlite``/``pytest.mark.postgres``). A test that uses it,
  directly or through ``database_url``/``database``, runs once per backend.
- ``database_url``: a fresh, migrated database of the current backend.
- ``database``: that database opened (runner ``"thread"``), closed afterwards.
- PostgreSQL is a session-wide throwaway cluster (or ``$MNEMO_TEST_POSTGRES_URL``),
  started only when the first PostgreSQL test runs.
- ``async def`` tests run on the test's own event loop (``event_loop``), the
  loop that function-scoped fixtures such as ``database`` are bound to.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from mnemo_server.store.transactions.database import Database
from tests.support.databases import PostgresDatabases, SqliteDatabases, opened_database
from tests.support.pgcluster import ThrowawayPostgres

BACKENDS = [
    pytest.param("sqlite", id="sqlite", marks=pytest.mark.sqlite),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


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
def postgres_server() -> Iterator[ThrowawayPostgres]:
    with ThrowawayPostgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_databases(postgres_server: ThrowawayPostgres) -> Iterator[PostgresDatabases]:
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
    postgres: PostgresDatabases = request.getfixturevalue("postgres_databases")
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
