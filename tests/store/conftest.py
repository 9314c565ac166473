"""Fixtures of the storage conformance suite: the store under test, through
its Protocols, on a fresh database of each backend; and, on PostgreSQL, the
sharding audit of every statement the store runs (``docs/operations.md``,
"Sharding by user")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mnemo_server.store.composed import SqlStore
from mnemo_server.store.transactions.database import Database
from tests.support.shard_audit import ShardAudit


@pytest.fixture
def sql_store(database: Database) -> SqlStore:
    return SqlStore(database)


@pytest.fixture
def memory(sql_store: SqlStore) -> SqlStore:
    """The store, for the working memory tests (reads: ``memory.conversations``)."""
    return sql_store


@pytest.fixture
def history(sql_store: SqlStore) -> SqlStore:
    """The store, for the conversation tests (reads: ``history.conversations``)."""
    return sql_store


# ------------------------------------------------------- the sharding audit


@pytest.fixture(scope="session")
def shard_audit() -> Iterator[ShardAudit]:
    with ShardAudit() as audit:
        yield audit


@pytest.fixture(autouse=True)
def every_store_statement_names_its_user(shard_audit: ShardAudit) -> Iterator[None]:
    """Fails the test (at teardown) if the store ran, on PostgreSQL, a
    statement that touches a per-user table without holding it to a user
    (``tests.support.shard_audit``), unless it is a documented global one."""
    shard_audit.take_distinct()
    yield
    problems = list(shard_audit.violations())
    if problems:
        pytest.fail(
            "statements that a sharded store could not route to one user's shard "
            "(add the user_id condition, or document the statement in "
            "tests/support/shard_audit.py GLOBAL_STATEMENTS):\n" + "\n".join(problems),
            pytrace=False,
        )
