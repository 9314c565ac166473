"""DeleteUserData through a real server: every row of the user leaves every
table (enumerated from the schema and from the live database, so a table
added later is covered) but the change feed's ERASE change (no state) and
cursor counter and the consent decision and memory switch (with their user
row), other users keep theirs, the receipt counts what was erased (the
changes too) and what was kept, a withdrawn consent or a switch turned off
still refuses writes after the erasure, a second erasure erases nothing and
appends no change, and on SQLite no byte of the erased content remains in
the database file or its WAL."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from sqlalchemy import Connection, column, func, select, table, text

from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import governance_pb2_grpc, memories_pb2_grpc, sync_pb2, sync_pb2_grpc
from mnemo.v1 import memories_pb2 as mm
from mnemo_server.domain.text_search import query_terms
from mnemo_server.store.engine.engines import normalize_url
from mnemo_server.store.memories.text_index import visibility_key
from mnemo_server.store.schema import (
    change_cursors,
    changes,
    embedding_backlog,
    user_settings,
    users,
)
from tests.api.user_data import erase, export, populate
from tests.support.rpc_errors import ErrorDetails, rpc_failure
from tests.support.user_rows import connected, user_digest, user_tables

ALICE, BOB = "alice", "bob"
ALICE_MARK, BOB_MARK = "Zqxjvalice", "Wvkqbob"

NO_USER_ID = {
    "alembic_version": "the schema revision",
    "app_states": "a tenant's app state (AgentStateService), written by its admins: no user's data",
    "embedding_models": "the server's embedding models (backfill position, lease): no user's data",
    "memories_fts": "SQLite full text (contentless): erased with the user's live entries",
    "sqlite_sequence": "SQLite's AUTOINCREMENT counters",
    "user_erasures": "the tenant's audit record of an erasure by someone else "
    "(ListUserErasures): it names the erased user on purpose and outlives the user",
}
"""Tables of the live database without a ``user_id`` column, and why that is
fine. Any other such table fails the test: it could hold a user's data that
the erasure does not reach."""

RETAINED = {user_settings.name: 1, users.name: 1}
"""What an erasure keeps of a user who set consent or the memory switch: the
decision and the user row it belongs to (``store.user_data.erase``)."""

AFTER_ERASURE = {changes.name: 1, change_cursors.name: 1, **RETAINED}
"""What an erasure leaves of the user: its ERASE change (operation and the
user's name, no state) and the cursor counter, so the user's cursors keep
growing and devices learn of the erasure, and the retained decision."""


def _user_counts(conn: Connection, user_id: str) -> dict[str, int]:
    return {
        t.name: conn.execute(select(func.count()).where(t.c.user_id == user_id)).scalar_one()
        for t in user_tables()
    }


def _live_tables(conn: Connection) -> dict[str, set[str]]:
    """Every table of the live database with its columns (``sqlite_master`` /
    ``information_schema``, not the metadata)."""
    if conn.dialect.name == "sqlite":
        names = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars()
        return {
            name: {row[1] for row in conn.exec_driver_sql(f'PRAGMA table_info("{name}")')}
            for name in list(names)
        }
    found: dict[str, set[str]] = {}
    for name, column_name in conn.execute(
        text(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c "
            "JOIN information_schema.tables t USING (table_schema, table_name) "
            "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'"
        )
    ):
        found.setdefault(name, set()).add(column_name)
    return found


def _fts_matches(conn: Connection, user_id: str, word: str) -> list[int]:
    """SQLite: the rowids of ``memories_fts`` matching ``word``'s term in
    ``user_id``'s identity-scope entries (index tokens carry a visibility
    key: ``store.memories.text_index``)."""
    (term,) = query_terms(word)
    token = visibility_key(user_id, "") + term
    return list(
        conn.execute(
            text("SELECT rowid FROM memories_fts WHERE memories_fts MATCH :q"), {"q": f'"{token}"'}
        ).scalars()
    )


def test_erasure_leaves_no_row_of_the_user_and_keeps_the_others(
    channel: grpc.Channel, database_url: str, backend: str
) -> None:
    populate(channel, ALICE, ALICE_MARK)
    populate(channel, BOB, BOB_MARK)
    bob_before = user_digest(database_url, BOB)
    with connected(database_url) as conn:
        before = _user_counts(conn, ALICE)
        if backend == "sqlite":
            assert _fts_matches(conn, ALICE, ALICE_MARK)
    # Every table had some of Alice's rows; but for the embedding backlog,
    # which the server empties on its own (its erasure: tests/store/test_embedding_backlog.py).
    assert all(before[t] > 0 for t in before if t != embedding_backlog.name), before

    receipt = erase(channel, ALICE)

    expected = dict(before) | dict.fromkeys(RETAINED, 0)
    del expected[change_cursors.name]  # the counter stays
    if backend == "sqlite":
        expected["memories_fts"] = 4  # Alice's live (unarchived) entries
    assert dict(receipt.deleted_rows) == expected
    assert dict(receipt.retained_rows) == RETAINED
    assert (receipt.consent.state, receipt.consent.policy_version) == (
        gv.CONSENT_STATE_GRANTED,
        "v2",
    )
    assert receipt.memory_settings.enabled
    assert receipt.HasField("delete_time")
    with connected(database_url) as conn:
        remaining_rows = _user_counts(conn, ALICE)
        assert {t: n for t, n in remaining_rows.items() if n} == AFTER_ERASURE
        erase_change = conn.execute(select(changes).where(changes.c.user_id == ALICE)).one()
        assert (erase_change.operation, erase_change.state_json) == ("erase", None)
        assert erase_change.cursor == before[changes.name] + 1
        live = _live_tables(conn)
        assert {t.name for t in user_tables()} <= set(live)
        for name, columns in sorted(live.items()):
            if "user_id" in columns:
                remaining = conn.execute(
                    select(func.count()).select_from(table(name)).where(column("user_id") == ALICE)
                ).scalar_one()
                assert remaining == AFTER_ERASURE.get(name, 0), name
            else:
                assert name in NO_USER_ID or name.startswith("memories_fts_"), name
        if backend == "sqlite":
            assert _fts_matches(conn, ALICE, ALICE_MARK) == []
            assert _fts_matches(conn, BOB, BOB_MARK)
    assert user_digest(database_url, BOB) == bob_before
    assert [r.WhichOneof("record") for r in export(channel, ALICE)] == [
        "consent",
        "memory_settings",
    ]
    assert export(channel, BOB)


def _changes(channel: grpc.Channel, user: str) -> sync_pb2.ListChangesResponse:
    stub = sync_pb2_grpc.SyncServiceStub(channel)
    return stub.ListChanges(sync_pb2.ListChangesRequest(parent=f"users/{user}", page_size=100))


def test_erasure_is_idempotent_and_a_repeat_appends_no_change(
    channel: grpc.Channel, backend: str
) -> None:
    populate(channel, ALICE, ALICE_MARK)
    first = erase(channel, ALICE)
    after_first = _changes(channel, ALICE)
    second = erase(channel, ALICE)
    never = erase(channel, "never-seen")
    assert set(second.deleted_rows) == set(first.deleted_rows) == set(never.deleted_rows)
    assert set(second.deleted_rows.values()) == {0} == set(never.deleted_rows.values())
    assert second.delete_time.ToDatetime() >= first.delete_time.ToDatetime()
    # One rule: an ERASE change (and a cursor) exactly when rows were deleted.
    assert first.change_cursor > 0
    assert (second.change_cursor, never.change_cursor) == (0, 0)
    assert [c.operation for c in after_first.changes] == [sync_pb2.CHANGE_OPERATION_ERASE]
    assert after_first.changes[0].cursor == first.change_cursor
    assert _changes(channel, ALICE) == after_first  # the first ERASE change stays
    assert _changes(channel, "never-seen").changes == []
    assert dict(second.retained_rows) == RETAINED
    assert dict(never.retained_rows) == {}


def _save(channel: grpc.Channel, user: str) -> ErrorDetails:
    """A save that must be refused."""
    stub = memories_pb2_grpc.MemoryServiceStub(channel)
    request = mm.CreateMemoryRequest(parent=f"users/{user}", memory=mm.Memory(text="saved after"))
    return rpc_failure(stub.CreateMemory, request)


@pytest.mark.parametrize(
    ("close", "reason"),
    [("withdraw", "MEMORY_CONSENT_WITHDRAWN"), ("switch_off", "MEMORY_DISABLED")],
)
def test_a_closed_gate_survives_the_erasure(channel: grpc.Channel, close: str, reason: str) -> None:
    populate(channel, ALICE, ALICE_MARK)
    governance = governance_pb2_grpc.GovernanceServiceStub(channel)
    if close == "withdraw":
        governance.SetConsent(
            gv.SetConsentRequest(
                consent=gv.Consent(
                    name=f"users/{ALICE}/consent",
                    state=gv.CONSENT_STATE_WITHDRAWN,
                    policy_version="v3",
                )
            )
        )
    else:
        governance.UpdateMemorySettings(
            gv.UpdateMemorySettingsRequest(
                memory_settings=gv.MemorySettings(
                    name=f"users/{ALICE}/memorySettings", enabled=False
                )
            )
        )

    receipt = erase(channel, ALICE)

    assert dict(receipt.retained_rows) == RETAINED
    if close == "withdraw":
        assert receipt.consent.state == gv.CONSENT_STATE_WITHDRAWN
        assert receipt.consent.policy_version == "v3"
    else:
        assert not receipt.memory_settings.enabled
    failure = _save(channel, ALICE)
    assert (failure.code, failure.reason) == (grpc.StatusCode.FAILED_PRECONDITION, reason)
    stored = governance.GetConsent(gv.GetConsentRequest(name=f"users/{ALICE}/consent"))
    assert stored.consent == receipt.consent
    # Erasing again changes nothing and the gate stays closed.
    assert erase(channel, ALICE).change_cursor == 0
    assert _save(channel, ALICE).reason == reason


def test_erasure_validates_the_parent(channel: grpc.Channel) -> None:
    stub = governance_pb2_grpc.GovernanceServiceStub(channel)
    failure = rpc_failure(stub.DeleteUserData, gv.DeleteUserDataRequest(parent="users/"))
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")


def _file_bytes(database_url: str) -> bytes:
    path = Path(normalize_url(database_url).database or "")
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


@pytest.mark.parametrize(
    "backend", [pytest.param("sqlite", marks=pytest.mark.sqlite)], indirect=True
)
def test_erased_content_is_in_no_byte_of_the_sqlite_files(
    channel: grpc.Channel, database_url: str
) -> None:
    populate(channel, ALICE, ALICE_MARK)
    populate(channel, BOB, BOB_MARK)
    # As written, and as the full-text index and term counts hold it (a stem).
    (alice_stem,) = query_terms(ALICE_MARK)
    (bob_stem,) = query_terms(BOB_MARK)
    spellings = {ALICE_MARK.encode(), alice_stem.encode()}
    stored = _file_bytes(database_url)
    assert all(s in stored for s in spellings)

    erase(channel, ALICE)

    after = _file_bytes(database_url)
    assert not [s for s in spellings if s in after]
    assert BOB_MARK.encode() in after and bob_stem.encode() in after
    wal = Path(f"{normalize_url(database_url).database}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
