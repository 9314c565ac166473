"""Fixtures of the storage conformance suite: the store under test, through
its Protocols, on a fresh database of each backend."""

from __future__ import annotations

import pytest

from mnemo_server.store.database import Database
from mnemo_server.store.interfaces import ConversationStore, WorkingMemoryStore
from mnemo_server.store.sql import SqlStore


@pytest.fixture
def sql_store(database: Database) -> SqlStore:
    return SqlStore(database)


@pytest.fixture
def memory(sql_store: SqlStore) -> WorkingMemoryStore:
    return sql_store


@pytest.fixture
def history(sql_store: SqlStore) -> ConversationStore:
    return sql_store
