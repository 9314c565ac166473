"""The planner's statistics after bulk writes (``store.engine.statistics``):
on PostgreSQL, a write that adds ``BULK_ROWS`` rows or more to a table (a
large ``BatchCreateMemories``, an import) leaves it analysed soon after its
commit, off the request's path; a small write does not. SQLite has no
analyser (its reads do not depend on gathered statistics)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from sqlalchemy import text

from mnemo_server.domain.memory_models import Memory
from mnemo_server.domain.models import Conversation
from mnemo_server.domain.user_data import UserData
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.engine.statistics import BULK_ROWS, Analyzer
from mnemo_server.store.transactions.database import Database
from mnemo_server.store.user_data.store import SqlUserData
from tests.store.memory_samples import draft
from tests.store.writes import create_memories, import_user

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
_BOUND_S = 60.0  # a bound on waiting, not a timing assertion


async def _settled(analyzer: Analyzer, runs: int) -> None:
    """Wait until ``analyzer`` completed ``runs`` runs and has nothing pending."""
    deadline = time.monotonic() + _BOUND_S
    while not (analyzer.runs >= runs and analyzer.idle()):
        assert time.monotonic() < deadline, "the analyser did not run"
        await asyncio.sleep(0.05)


def _analysed(database: Database, table: str) -> tuple[bool, int]:
    """Whether ``table`` was analysed by hand (not by autovacuum), and the
    planner's estimate of its rows (``pg_class.reltuples``; -1: never
    estimated)."""
    with database.engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT s.last_analyze IS NOT NULL, c.reltuples FROM pg_stat_user_tables AS s "
                "JOIN pg_class AS c ON c.oid = s.relid WHERE s.relname = :table"
            ),
            {"table": table},
        ).one()
    return bool(row[0]), int(row[1])


async def test_a_large_batch_leaves_its_tables_analysed(
    database: Database, sql_store: SqlStore, backend: str
) -> None:
    if backend == "sqlite":
        assert database.analyzer is None
        return
    analyzer = database.analyzer
    assert analyzer is not None
    small = [(f"s{i}", draft(f"The user likes small fact {i}.")) for i in range(10)]
    await create_memories(sql_store, "alice", small)
    assert analyzer.idle() and analyzer.runs == 0
    assert _analysed(database, "memories") == (False, -1)

    bulk = [
        (f"b{i}", draft(f"The user likes bulk fact {i}.", vector=[1.0, 0.0, float(i)]))
        for i in range(BULK_ROWS)
    ]
    await create_memories(sql_store, "alice", bulk)
    await _settled(analyzer, 1)
    assert _analysed(database, "memories") == (True, 10 + BULK_ROWS)
    assert _analysed(database, "memory_embeddings") == (True, BULK_ROWS)
    assert _analysed(database, "memory_terms")[0] is True


async def test_an_import_leaves_its_tables_analysed(database: Database, backend: str) -> None:
    if backend == "sqlite":
        return  # no analyser (previous test)
    analyzer = database.analyzer
    assert analyzer is not None
    entries = tuple(
        Memory(memory_id=f"m{i}", user_id="u1", text=f"fact {i}", create_time=T0, update_time=T0)
        for i in range(BULK_ROWS)
    )
    data = UserData(
        conversations=(Conversation("u1", "c1", create_time=T0, update_time=T0, etag="e1"),),
        memories=entries,
    )
    await import_user(SqlUserData(database), "u1", data)
    await _settled(analyzer, 1)
    assert _analysed(database, "memories") == (True, BULK_ROWS)
    assert _analysed(database, "memory_terms")[0] is True
    assert _analysed(database, "conversations")[0] is False  # one row: not a bulk
