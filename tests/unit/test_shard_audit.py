"""The sharding audit's checker (``tests.support.shard_audit``) on sample SQL:
what it takes as held to a user, and what it reports, so that the store
suite's audit (``tests/store/conftest.py``) fails on a statement that lacks
the user."""

from __future__ import annotations

import pytest

from mnemo_server.store.schema import metadata
from tests.support.shard_audit import (
    GLOBAL_STATEMENTS,
    PER_USER_TABLES,
    REFERENCE_TABLES,
    unkeyed_tables,
)

P = "%(user_id_1)s"

KEYED = [
    f"SELECT memories.id FROM memories WHERE memories.user_id = {P} AND memories.id = 3",
    f"SELECT m.text FROM memories AS m WHERE m.user_id = {P}",
    f"SELECT m.text FROM memories m WHERE {P} = m.user_id",
    "SELECT term FROM memory_terms WHERE user_id = :user_id AND term = ANY(CAST(:t AS text[]))",
    "SELECT user_id FROM users WHERE user_id IN (%(a)s, %(b)s)",
    # Through the join: memory_embeddings is held by memories' user.
    "SELECT memories.id FROM memories LEFT OUTER JOIN memory_embeddings "
    "ON memory_embeddings.memory_pk = memories.id "
    "AND memory_embeddings.user_id = memories.user_id "
    f"WHERE memories.user_id = {P}",
    f"UPDATE conversations SET etag=%(etag)s WHERE conversations.id = %(pk)s "
    f"AND conversations.user_id = {P} RETURNING conversations.id",
    "INSERT INTO messages (conversation_pk, position, user_id, text) "
    "VALUES (%(a)s, %(b)s, %(c)s, %(d)s)",
    "INSERT INTO change_cursors (user_id, last_cursor, last_change_at) VALUES (%(u)s, 1, 2) "
    "ON CONFLICT (user_id) DO UPDATE SET last_cursor = change_cursors.last_cursor + 1",
    # Each branch of a UNION is held on its own.
    f"SELECT a.x FROM (SELECT memories.id AS x FROM memories WHERE memories.user_id = {P} "
    f"UNION ALL SELECT memories.id AS x FROM memory_versions JOIN memories "
    f"ON memories.id = memory_versions.memory_pk WHERE memories.user_id = {P} "
    f"AND memory_versions.user_id = {P}) AS a",
    # A correlated subquery's unqualified user_id is its own table's.
    f"SELECT c.id FROM conversations AS c WHERE c.user_id = {P} AND EXISTS "
    f"(SELECT 1 FROM messages WHERE user_id = {P} AND messages.conversation_pk = c.id)",
    # String literals are not SQL: no table in them.
    f"SELECT 'FROM memories' FROM users WHERE users.user_id = {P}",
    "SELECT set_config('enable_seqscan', %(s)s, true)",
    "SAVEPOINT sa_savepoint_1",
    # A materialized CTE and the join after it, each holding the user.
    "WITH hits AS MATERIALIZED (SELECT id FROM memories WHERE archived_at IS NULL "
    "AND user_id = %(user_id)s AND x @@ CAST(%(m)s AS tsquery)) SELECT m.memory_id "
    "FROM hits JOIN memories AS m ON m.user_id = %(user_id)s AND m.id = hits.id",
]

UNKEYED = [
    ("SELECT memories.id FROM memories WHERE memories.id = 3", ["memories"]),
    ("DELETE FROM memory_versions WHERE memory_versions.memory_pk = %(pk)s", ["memory_versions"]),
    # The join's other table is not held: it would be a multi-shard join.
    (
        "SELECT memories.id FROM memories LEFT OUTER JOIN memory_embeddings "
        f"ON memory_embeddings.memory_pk = memories.id WHERE memories.user_id = {P}",
        ["memory_embeddings"],
    ),
    # Two tables joined on user_id, neither held to a value: still every user.
    (
        "SELECT c.id FROM conversations AS c JOIN messages AS m ON m.user_id = c.user_id",
        ["conversations AS c", "messages AS m"],
    ),
    # user_id in the select list or the SET clause is no condition.
    ("SELECT memories.user_id FROM memories", ["memories"]),
    (
        "UPDATE conversations SET user_id=%(u)s WHERE conversations.id = %(pk)s",
        ["conversations"],
    ),
    ("INSERT INTO messages (conversation_pk, position) VALUES (1, 2)", ["messages"]),
    # Held in one UNION branch only.
    (
        f"SELECT memories.id FROM memories WHERE memories.user_id = {P} "
        "UNION SELECT memories.id FROM memories WHERE memories.id = 1",
        ["memories"],
    ),
    # A comparison with another column, not a value.
    (
        "SELECT events.id FROM events WHERE events.user_id = events.tenant_id",
        ["events"],
    ),
    (
        'SELECT * FROM "memories" WHERE "memories"."key" = %(k)s',
        ["memories"],
    ),
]


@pytest.mark.parametrize("sql", KEYED)
def test_a_statement_held_to_a_user_passes(sql: str) -> None:
    assert unkeyed_tables(sql) == []


@pytest.mark.parametrize(("sql", "unkeyed"), UNKEYED)
def test_a_statement_missing_the_user_is_reported(sql: str, unkeyed: list[str]) -> None:
    assert unkeyed_tables(sql) == unkeyed


def test_every_table_is_a_per_user_table_but_the_reference_tables() -> None:
    assert PER_USER_TABLES | REFERENCE_TABLES == set(metadata.tables)
    assert not PER_USER_TABLES & REFERENCE_TABLES


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT conversations.id, conversations.user_id FROM conversations "
        "WHERE conversations.expire_at <= %(now)s ORDER BY conversations.expire_at LIMIT 10",
        "SELECT changes.user_id, changes.cursor FROM changes "
        "WHERE changes.created_at < %(t)s ORDER BY changes.created_at LIMIT 10",
        "SELECT idempotency_records.user_id, idempotency_records.request_id "
        "FROM idempotency_records WHERE idempotency_records.created_at < %(t)s "
        "ORDER BY idempotency_records.created_at LIMIT 10",
    ],
)
def test_each_documented_global_statement_is_unkeyed_and_allowed(sql: str) -> None:
    assert unkeyed_tables(sql) != []
    assert sum(g.matches(sql) for g in GLOBAL_STATEMENTS) == 1


def test_a_per_user_statement_is_not_allowed_as_global() -> None:
    sql = "DELETE FROM memories WHERE memories.id = %(pk)s"
    assert unkeyed_tables(sql) == ["memories"]
    assert not any(g.matches(sql) for g in GLOBAL_STATEMENTS)
