"""Fixtures of the storage conformance suite: the store under test, through
its Protocols, on a fresh database of each backend."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from mnemo_server.store.database import Database
from mnemo_server.store.interfaces import ConversationStore, WorkingMemoryStore
from mnemo_server.store.sql import SqlStore
from tests.support.databases import opened_database

RUNNERS = ["thread", "async"]


@pytest.fixture
def sql_store(database: Database) -> SqlStore:
    return SqlStore(database)


@pytest.fixture
def memory(sql_store: SqlStore) -> WorkingMemoryStore:
    return sql_store


@pytest.fixture
def history(sql_store: SqlStore) -> ConversationStore:
    return sql_store


@pytest.fixture(params=RUNNERS)
def runner_database(
    request: pytest.FixtureRequest, database_url: str, event_loop: asyncio.AbstractEventLoop
) -> Iterator[Database]:
    """The fresh database opened with each runner (for the few tests that
    exercise both)."""
    yield from opened_database(database_url, event_loop, runner=request.param)
