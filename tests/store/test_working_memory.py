"""Working memory conformance (WorkingMemoryStore), on every backend."""

from __future__ import annotations

import asyncio
from datetime import UTC
from typing import Any

import psycopg
import pytest

from mnemo_server.domain.errors import Aborted, FailedPrecondition
from mnemo_server.domain.models import ConversationKey, MemoryState, RememberResult
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.transactions.database import Database, open_database
from tests.store import writes
from tests.store.samples import exchange, idem
from tests.store.writes import clear_state, save_state

DEFAULT = ConversationKey("alice", "")
NAMED = ConversationKey("alice", "trip")


async def remember(
    memory: SqlStore,
    key: ConversationKey,
    n: int,
    *,
    keep_recent: int = 3,
    **options: Any,
) -> RememberResult:
    """Remember the ``n``-th exchange, keeping the newest three unless told
    otherwise (``options``: those of ``writes.remember``)."""
    return await writes.remember(memory, key, exchange(n), keep_recent=keep_recent, **options)


async def test_a_state_never_written_is_empty_with_an_empty_etag(
    memory: SqlStore,
) -> None:
    assert await memory.conversations.get_state(DEFAULT) == MemoryState()
    assert await memory.conversations.get_state(NAMED) == MemoryState()


async def test_save_then_get_returns_what_was_saved(memory: SqlStore) -> None:
    saved = await save_state(memory, NAMED, "likes trains", [exchange(1), exchange(2)])
    assert saved.summary == "likes trains"
    assert saved.recent == (exchange(1), exchange(2))
    assert saved.etag != ""
    assert saved.update_time is not None and saved.update_time.tzinfo is not None
    assert await memory.conversations.get_state(NAMED) == saved


async def test_exchange_times_round_trip_exactly_and_come_back_in_utc(
    memory: SqlStore,
) -> None:
    original = exchange(7)
    state = await save_state(memory, NAMED, "", [original])
    (stored,) = (await memory.conversations.get_state(NAMED)).recent
    assert stored.at == original.at  # the same instant, to the microsecond
    assert stored.at.utcoffset() is not None and stored.at.tzinfo == UTC
    assert state.recent == (original,)


async def test_save_with_a_stale_etag_is_aborted_and_changes_nothing(
    memory: SqlStore,
) -> None:
    first = await save_state(memory, NAMED, "one", [], expected_etag="")
    second = await save_state(memory, NAMED, "two", [], expected_etag=first.etag)
    assert second.etag not in ("", first.etag)
    with pytest.raises(Aborted) as caught:
        await save_state(memory, NAMED, "three", [], expected_etag=first.etag)
    assert caught.value.reason == "ETAG_MISMATCH"
    assert await memory.conversations.get_state(NAMED) == second


async def test_the_empty_etag_only_matches_a_state_never_written(
    memory: SqlStore,
) -> None:
    await save_state(memory, NAMED, "one", [], expected_etag="")
    with pytest.raises(Aborted) as caught:
        await save_state(memory, NAMED, "two", [], expected_etag="")
    assert caught.value.reason == "ETAG_MISMATCH"


async def test_remembering_five_keeps_the_last_three_and_returns_what_fell_off(
    memory: SqlStore,
) -> None:
    evicted = []
    for n in range(1, 6):
        result = await remember(memory, DEFAULT, n)
        evicted.append(result.evicted)
    assert evicted == [(), (), (), (exchange(1),), (exchange(2),)]
    assert result.state.recent == (exchange(3), exchange(4), exchange(5))
    assert await memory.conversations.get_state(DEFAULT) == result.state


async def test_remember_replaces_the_summary_only_when_given(memory: SqlStore) -> None:
    await remember(memory, NAMED, 1, summary="first brief")
    kept = await remember(memory, NAMED, 2)
    assert kept.state.summary == "first brief"
    replaced = await remember(memory, NAMED, 3, summary="second brief", keep_recent=1)
    assert replaced.state.summary == "second brief"
    assert replaced.state.recent == (exchange(3),)
    assert replaced.evicted == (exchange(1), exchange(2))


async def test_remember_checks_the_etag(memory: SqlStore) -> None:
    first = await remember(memory, NAMED, 1)
    await remember(memory, NAMED, 2, expected_etag=first.state.etag)
    with pytest.raises(Aborted) as caught:
        await remember(memory, NAMED, 3, expected_etag=first.state.etag)
    assert caught.value.reason == "ETAG_MISMATCH"
    assert len((await memory.conversations.get_state(NAMED)).recent) == 2


async def test_a_retried_remember_returns_the_first_result_and_writes_nothing(
    memory: SqlStore,
) -> None:
    key = idem("req-1", scope="RememberExchange")
    first = await remember(memory, NAMED, 1, idempotency=key)
    await remember(memory, NAMED, 2)
    again = await remember(memory, NAMED, 1, idempotency=key)
    assert again == first
    after = await memory.conversations.get_state(NAMED)
    assert after.recent == (exchange(1), exchange(2))


async def test_a_request_id_reused_for_another_request_is_refused(
    memory: SqlStore,
) -> None:
    await remember(memory, NAMED, 1, idempotency=idem("req-1", "fp-a", "RememberExchange"))
    before = await memory.conversations.get_state(NAMED)
    with pytest.raises(FailedPrecondition) as caught:
        await remember(memory, NAMED, 2, idempotency=idem("req-1", "fp-b", "RememberExchange"))
    assert caught.value.reason == "REQUEST_ID_REUSED"
    assert await memory.conversations.get_state(NAMED) == before


async def test_clear_empties_the_state_with_a_new_etag(memory: SqlStore) -> None:
    saved = await save_state(memory, NAMED, "brief", [exchange(1)])
    with pytest.raises(Aborted):
        await clear_state(memory, NAMED, expected_etag="not-the-etag")
    cleared = await clear_state(memory, NAMED, expected_etag=saved.etag)
    assert (cleared.summary, cleared.recent) == ("", ())
    assert cleared.etag not in ("", saved.etag)
    assert await memory.conversations.get_state(NAMED) == cleared


async def test_the_default_conversation_is_distinct_from_every_named_one(
    memory: SqlStore, history: SqlStore
) -> None:
    default = await save_state(memory, DEFAULT, "default brief", [exchange(1)])
    named = await save_state(memory, NAMED, "named brief", [exchange(2)])
    assert await memory.conversations.get_state(DEFAULT) == default
    assert await memory.conversations.get_state(NAMED) == named
    assert await memory.conversations.get_state(ConversationKey("alice", "other")) == MemoryState()
    assert await memory.conversations.get_state(ConversationKey("bob", "")) == MemoryState()
    # The default conversation never shows up as a conversation.
    page = await history.conversations.list_conversations("alice", limit=10, after=None)
    assert [c.conversation_id for c in page.items] == ["trip"]


async def test_a_second_client_reads_exactly_what_the_first_wrote(
    database: Database, database_url: str
) -> None:
    phone = SqlStore(database)
    written = await remember(phone, DEFAULT, 1, summary="on the phone")
    cloud = open_database(database_url, read_lanes=1)
    try:
        assert await SqlStore(cloud).conversations.get_state(DEFAULT) == written.state
    finally:
        await cloud.close()


async def test_a_first_write_that_waited_for_another_first_write_keeps_it(
    sql_store: SqlStore, database_url: str, backend: str, request: pytest.FixtureRequest
) -> None:
    """PostgreSQL: a first write of a conversation's state that waits for the
    conversation's lock while another first write commits its state row must
    see that row (no duplicate insert surfacing as INTERNAL, no lost write)."""
    if backend != "postgres":
        pytest.skip("SQLite has one writer: first writes never overlap")
    await writes.create_conversation(sql_store, "alice", "c1")
    key = ConversationKey("alice", "c1")
    dsn = database_url.replace("postgresql+psycopg://", "postgresql://")
    activity = "citus_stat_activity" if "citus" in request.node.name else "pg_stat_activity"
    with psycopg.connect(dsn) as other:
        pk = other.execute(
            "SELECT id FROM conversations WHERE user_id = 'alice' AND conversation_id = 'c1' "
            "FOR UPDATE"
        ).fetchone()
        assert pk is not None
        other.execute(
            "INSERT INTO working_memory (conversation_pk, user_id, summary, recent_json, etag, "
            "updated_at) VALUES (%s, 'alice', 'from the other writer', '[]', 'e1', 1)",
            (pk[0],),
        )
        waiting = asyncio.ensure_future(writes.remember(sql_store, key, exchange(1), keep_recent=5))
        with psycopg.connect(dsn, autocommit=True) as watcher:
            for _ in range(500):
                await asyncio.sleep(0.01)
                blocked = watcher.execute(
                    # On Citus the write waits on the worker holding the shard.
                    f"SELECT count(*) FROM {activity} WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database()"
                ).fetchone()
                if blocked and blocked[0]:
                    break
            else:
                pytest.fail("the store's write never waited for the conversation's lock")
        other.commit()
    result = await waiting
    assert result.state.summary == "from the other writer"
    assert [e.ask for e in result.state.recent] == ["ask 1"]
    assert (await sql_store.conversations.get_state(key)) == result.state
