"""Delete is for privacy: after ``delete_memory`` the entry's text (every
version of it) is in no table (the change feed's earlier changes included)
and no index, on SQLite not even in the database file's bytes; a tombstone
remains. On every backend."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from mnemo_server.domain.errors import Aborted, FailedPrecondition, NotFound
from mnemo_server.domain.memory_models import (
    CandidateDraft,
    CandidateState,
    MemoryChange,
    RecallQuery,
)
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.schema import metadata
from mnemo_server.store.transactions.database import Database
from tests.store import reads
from tests.store.memory_samples import draft, save
from tests.store.samples import idem
from tests.store.writes import (
    approve_candidate,
    create_memories,
    delete_memory,
    propose_candidates,
    update_memory,
)

# Its own stem, shares no prefix with any other word of the fixture (FTS5
# stores terms prefix-compressed), and appears nowhere else.
MARKER = "zorblaxqj"


@pytest.fixture
def store(sql_store: SqlStore) -> SqlStore:
    return sql_store


def _table_names(conn: Connection) -> list[str]:
    if conn.dialect.name == "sqlite":
        found = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))
    else:
        found = conn.execute(
            text("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        )
    return sorted(found.scalars())


def _tables_holding(conn: Connection, needle: str) -> dict[str, int]:
    """Rows per table with ``needle`` in any column (text or bytes)."""
    names = _table_names(conn)
    assert set(metadata.tables) <= set(names)
    if conn.dialect.name == "sqlite":
        assert {"memories_fts", "memories_fts_data", "memories_fts_idx"} <= set(names)
    holding: dict[str, int] = {}
    for name in names:
        if conn.dialect.name == "sqlite":
            rows: list[tuple[Any, ...]] = [
                tuple(r) for r in conn.execute(text(f'SELECT * FROM "{name}"'))
            ]
        else:
            rows = [tuple(r) for r in conn.execute(text(f'SELECT CAST(t AS text) FROM "{name}" t'))]
        hits = sum(1 for row in rows if any(_holds(value, needle) for value in row))
        if hits:
            holding[name] = hits
    return holding


def _holds(value: object, needle: str) -> bool:
    if isinstance(value, str):
        return needle in value
    if isinstance(value, bytes | memoryview):
        return needle.encode() in bytes(value)
    return False


def _sqlite_file_holds(database_url: str, needle: str) -> bool:
    """Checkpoint the WAL into the file (truncating it), then search the bytes."""
    path = Path(make_url(database_url).database or "")
    with sqlite3.connect(path) as conn:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    return needle.encode() in path.read_bytes()


async def test_delete_leaves_no_text_anywhere(
    store: SqlStore, database: Database, database_url: str
) -> None:
    # m1: created idempotently (the result, with its text, is recorded), updated
    # (the first text stays in the versions), then superseded by m3.
    original = f"The locker code word is {MARKER}"
    await create_memories(
        store,
        "alice",
        [("m1", draft(original, key="locker", vector=[1.0, 0.0]))],
        idempotency=idem("create-m1", scope="CreateMemory"),
    )
    await update_memory(store, "alice", "m1", MemoryChange(text=f"Locker word: {MARKER} (changed)"))
    await save(store, "m3", draft("The locker is number seven", key="locker"))
    # m2: proposed idempotently (recorded with its text), then approved.
    await propose_candidates(
        store,
        "alice",
        [
            CandidateDraft(
                candidate_id="c1",
                draft=draft(f"Secret pet name is {MARKER}", vector=[0.0, 1.0]),
                extractor="test",
            )
        ],
        idempotency=idem("propose-c1", scope="ProposeMemoryCandidates"),
    )
    await approve_candidate(store, "alice", "c1", memory_id="m2")
    # Unrelated data that must survive.
    keep = idem("create-m9", scope="CreateMemory")
    kept = await create_memories(
        store, "alice", [("m9", draft("Likes the locker room music"))], idempotency=keep
    )
    holding = await database.read(lambda conn: _tables_holding(conn, MARKER))
    # The change feed holds the texts too: the saves, the update, the archive,
    # the proposal and the approval.
    assert holding["changes"] >= 5, holding
    if database.dialect == "sqlite":
        assert _sqlite_file_holds(database_url, MARKER)

    tombstones = [await delete_memory(store, "alice", memory_id) for memory_id in ("m1", "m2")]

    assert await database.read(lambda conn: _tables_holding(conn, MARKER)) == {}
    if database.dialect == "sqlite":
        assert not _sqlite_file_holds(database_url, MARKER)
    assert await reads.recalled_ids(store, "alice", RecallQuery(text=MARKER), limit=10) == []
    # Tombstones remain, and deleting again returns them.
    assert [(t.memory_id, t.key) for t in tombstones] == [("m1", "locker"), ("m2", "")]
    assert await delete_memory(store, "alice", "m1") == tombstones[0]
    for memory_id in ("m1", "m2"):
        with pytest.raises(NotFound):
            await store.memories.get_memory("alice", memory_id)
    # The approved candidate stays approved, blanked; it cannot be approved again.
    page = await store.memories.list_candidates(
        "alice", include_resolved=True, limit=10, after=None
    )
    (candidate,) = page.items
    assert (candidate.state, candidate.draft.text, candidate.draft.embedding) == (
        CandidateState.APPROVED,
        "",
        None,
    )
    with pytest.raises(FailedPrecondition) as resolved:
        await approve_candidate(store, "alice", "c1", memory_id="m4")
    assert resolved.value.reason == "CANDIDATE_RESOLVED"
    # What was not deleted is intact: the chain's live entry, the unrelated
    # entry, its recorded result, its place in the index.
    assert (await store.memories.get_memory("alice", "m3")).text == "The locker is number seven"
    again = await create_memories(
        store, "alice", [("m9", draft("Likes the locker room music"))], idempotency=keep
    )
    assert again == kept
    found = await reads.recalled_ids(store, "alice", RecallQuery(text="locker"), limit=10)
    assert found == ["m9", "m3"]


async def test_delete_checks_the_etag_and_existence(store: SqlStore) -> None:
    saved = await save(store, "m1", draft("fact"))
    with pytest.raises(Aborted) as stale:
        await delete_memory(store, "alice", "m1", expected_etag="stale")
    assert stale.value.reason == "ETAG_MISMATCH"
    tombstone = await delete_memory(store, "alice", "m1", expected_etag=saved.etag)
    assert (tombstone.user_id, tombstone.memory_id) == ("alice", "m1")
    with pytest.raises(NotFound):
        await delete_memory(store, "alice", "never")
    with pytest.raises(NotFound):
        await delete_memory(store, "bob", "m1")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_deletes_between_writes_never_let_the_index_outgrow_what_fts5_reads(
    store: SqlStore, database: Database
) -> None:
    # Each FTS5 ``optimize`` after new writes adds a level to the index;
    # unchecked, a file of many deletes reached some 2,000 levels, where FTS5
    # can no longer read its index ("database disk image is malformed").
    rounds = 3 * fts.MAX_INDEX_LEVELS
    for n in range(rounds):
        for part in range(3):
            await save(store, f"k{n}-{part}", draft(f"kept note {n} part {part} about tea"))
        await save(store, f"d{n}", draft(f"passing note {n} about tea"))
        await delete_memory(store, "alice", f"d{n}")
    levels = await database.read(fts.index_levels)
    assert 0 < levels <= fts.MAX_INDEX_LEVELS
    found = await reads.recalled_ids(store, "alice", RecallQuery(text="tea"), limit=100)
    assert len(found) == 100 and all(memory_id.startswith("k") for memory_id in found)
    assert await reads.recalled_ids(store, "alice", RecallQuery(text="passing"), limit=10) == []
