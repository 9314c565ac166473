"""The change feed in the store: every mutation appends its changes (kind,
resource, etag, state) in its transaction; cursors are dense, grow per user
and are independent across users; an erasure keeps the counter growing and
leaves only its ERASE change; a private delete strips the earlier states;
pruning keeps the counter and expires older cursors. On every backend."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from sqlalchemy import Connection, func, select

from mnemo.v1 import sync_pb2
from mnemo_server.api.convert_changes import changes_to_proto
from mnemo_server.domain.changes import Change, ChangeOperation
from mnemo_server.domain.errors import Aborted, OutOfRange
from mnemo_server.domain.governance import ConsentState
from mnemo_server.domain.memory_models import CandidateDraft, MemoryChange, MemoryTombstone
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    Idempotency,
    MemoryState,
    RunError,
)
from mnemo_server.domain.user_data import ConversationMessage, ConversationState, UserData
from mnemo_server.store import change_sink, sql_changes
from mnemo_server.store.convert import now_micros, to_micros
from mnemo_server.store.database import Database, RetryTransaction
from mnemo_server.store.schema import change_cursors, changes
from mnemo_server.store.sql import SqlStore
from mnemo_server.store.sql_user_data import SqlUserData
from tests.store.memory_samples import draft, save
from tests.store.samples import exchange, idem, messages

ALICE, BOB = "alice", "bob"
CHAT = ConversationKey(ALICE, "chat")
DEFAULT = ConversationKey(ALICE, "")
U = "users/alice"


async def _all(store: SqlStore, user_id: str = ALICE, after: int = 0) -> list[Change]:
    page = await store.changes_after(user_id, after, limit=1000)
    return list(page.changes)


def _summary(found: list[Change]) -> list[tuple[str, str, str]]:
    return [
        (c.operation.value, c.resource_name, "" if c.state is None else type(c.state).__name__)
        for c in found
    ]


async def _append(
    store: SqlStore, conversation_id: str, *texts: str, idempotency: Idempotency | None = None
) -> AppendResult:
    return await store.append_messages(
        ALICE,
        conversation_id,
        messages(*texts),
        run_id="r",
        turn=1,
        expected_position=None,
        create_metadata={},
        idempotency=idempotency,
    )


async def _latest(store: SqlStore, user_id: str = ALICE) -> int:
    return (await store.latest_cursors([user_id]))[user_id]


async def test_every_mutation_appends_its_changes(sql_store: SqlStore) -> None:
    store = sql_store
    mark = 0

    async def since() -> list[Change]:
        nonlocal mark
        found = await _all(store, after=mark)
        if found:
            mark = found[-1].cursor
        return found

    # Working memory: save (the default conversation is no resource), remember, clear.
    saved = await store.save_state(DEFAULT, "s", [exchange(1)], expected_etag=None)
    (change,) = await since()
    assert (change.operation, change.resource_name, change.etag) == (
        ChangeOperation.UPSERT,
        f"{U}/memoryState",
        saved.etag,
    )
    assert change.state == saved
    remembered = await store.remember(
        CHAT, exchange(2), keep_recent=3, summary=None, expected_etag=None, idempotency=None
    )
    assert _summary(await since()) == [  # the conversation was created implicitly
        ("upsert", f"{U}/conversations/chat", "Conversation"),
        ("upsert", f"{U}/conversations/chat/memoryState", "MemoryState"),
    ]
    cleared = await store.clear_state(CHAT, expected_etag=remembered.state.etag)
    (change,) = await since()
    assert (change.etag, change.state) == (cleared.etag, cleared)

    # Conversations and history.
    created = await store.create_conversation(
        ALICE, "c2", metadata={"a": 1}, temporary=False, idempotency=None
    )
    (change,) = await since()
    assert (change.resource_name, change.etag, change.state) == (
        f"{U}/conversations/c2",
        created.etag,
        created,
    )
    updated = await store.update_conversation_metadata(ALICE, "c2", {"b": 2}, expected_etag=None)
    assert [c.state for c in await since()] == [updated]
    appended = await _append(store, "c2", "one", "two")
    found = await since()
    assert _summary(found) == [
        ("upsert", f"{U}/conversations/c2", "Conversation"),
        ("upsert", f"{U}/conversations/c2/messages/0", "StoredMessage"),
        ("upsert", f"{U}/conversations/c2/messages/1", "StoredMessage"),
    ]
    assert found[0].state == appended.conversation
    assert tuple(c.state for c in found[1:]) == appended.messages
    run = await store.record_failed_run(
        ALICE,
        "c2",
        run_id="r2",
        error=RunError("boom"),
        messages=messages("partial"),
        idempotency=None,
    )
    (change,) = await since()
    assert (change.resource_name, change.state) == (
        f"{U}/conversations/c2/failedRuns/{run.failed_run_id}",
        run,
    )
    snapshot = await store.snapshot_history(ALICE, "c2")
    await store.replace_history_prefix(
        ALICE,
        "c2",
        revision=snapshot.revision,
        message_count=1,
        replacement=messages("summary"),
        run_id="r3",
        idempotency=None,
    )
    assert _summary(await since()) == [("upsert", f"{U}/conversations/c2", "Conversation")]
    emptied = await store.clear_messages(ALICE, "c2")
    (change,) = await since()
    assert isinstance(change.state, Conversation) and change.state.message_count == 0
    assert change.etag == emptied.etag
    await store.delete_conversation(ALICE, "c2", expected_etag=None)
    (change,) = await since()
    assert (change.operation, change.resource_name, change.state) == (
        ChangeOperation.DELETE,
        f"{U}/conversations/c2",
        None,
    )
    # The deleted conversation's earlier changes lost their state; the others kept theirs.
    earlier = await _all(store, after=0)
    c2 = [c for c in earlier if c.resource_name.startswith(f"{U}/conversations/c2")]
    assert len(c2) == 9 and {c.state for c in c2} == {None}
    # ... and so did the working memory the clear above emptied (all but the clear's own).
    chat_state = [c for c in earlier if c.resource_name == f"{U}/conversations/chat/memoryState"]
    assert [c.state is None for c in chat_state] == [True, False]
    assert all(c.state is not None for c in earlier if c not in c2 and c not in chat_state[:1])

    # Memories: a keyed save archives the live entry of its key.
    first = await save(store, "m1", draft("tea", key="drink", vector=[1.0, 0.0]))
    (change,) = await since()
    assert change.state == dataclasses.replace(first, embedding=None)  # vectors are left out
    assert change.etag == first.etag
    second = await save(store, "m2", draft("coffee", key="drink"))
    found = await since()
    assert _summary(found) == [
        ("upsert", f"{U}/memories/m1", "Memory"),
        ("upsert", f"{U}/memories/m2", "Memory"),
    ]
    assert found[0].state is not None and found[0].state.archive_time is not None
    assert found[1].state == second
    changed = await store.update_memory(
        ALICE, "m2", MemoryChange(text="espresso"), expected_etag=None
    )
    (change,) = await since()
    assert (change.etag, change.state) == (changed.etag, changed)
    tombstone = await store.delete_memory(ALICE, "m2", expected_etag=None)
    (change,) = await since()
    assert (change.operation, change.state) == (ChangeOperation.DELETE, tombstone)

    # Candidates: propose, approve (an entry and the candidate), reject.
    proposals = [
        CandidateDraft(candidate_id=c, draft=draft(f"fact {c}"), extractor="t")
        for c in ("c1", "c2")
    ]
    await store.propose_candidates(ALICE, proposals, idempotency=None)
    assert _summary(await since()) == [
        ("upsert", f"{U}/memoryCandidates/c1", "MemoryCandidate"),
        ("upsert", f"{U}/memoryCandidates/c2", "MemoryCandidate"),
    ]
    await store.approve_candidate(ALICE, "c1", memory_id="m3")
    assert _summary(await since()) == [
        ("upsert", f"{U}/memories/m3", "Memory"),
        ("upsert", f"{U}/memoryCandidates/c1", "MemoryCandidate"),
    ]
    await store.approve_candidate(ALICE, "c1", memory_id="m3")  # already approved: no change
    assert await since() == []
    await store.reject_candidate(ALICE, "c2")
    assert _summary(await since()) == [("upsert", f"{U}/memoryCandidates/c2", "MemoryCandidate")]

    # Settings and consent (a withdrawal cancels the pending candidates).
    settings = await store.update_memory_settings(ALICE, enabled=True, expected_etag=None)
    (change,) = await since()
    assert (change.resource_name, change.etag, change.state) == (
        f"{U}/memorySettings",
        settings.etag,
        settings,
    )
    await store.propose_candidates(
        ALICE,
        [CandidateDraft(candidate_id="c3", draft=draft("x"), extractor="t")],
        idempotency=None,
    )
    await since()
    consent = await store.set_consent(ALICE, ConsentState.WITHDRAWN, "v1")
    found = await since()
    assert _summary(found) == [
        ("upsert", f"{U}/consent", "Consent"),
        ("upsert", f"{U}/memoryCandidates/c3", "MemoryCandidate"),
    ]
    assert found[0].state == consent.consent
    await store.set_consent(ALICE, ConsentState.WITHDRAWN, "v1")  # unchanged: no change
    assert await since() == []


async def test_cursors_are_dense_per_user_and_independent(sql_store: SqlStore) -> None:
    for n in range(3):
        await sql_store.save_state(DEFAULT, f"a{n}", [], expected_etag=None)
        await sql_store.save_state(ConversationKey(BOB, ""), f"b{n}", [], expected_etag=None)
    await _append(sql_store, "c", "x", "y")
    alice = [c.cursor for c in await _all(sql_store)]
    bob = [c.cursor for c in await _all(sql_store, BOB)]
    assert alice == list(range(1, 7))
    assert bob == [1, 2, 3]
    assert await sql_store.latest_cursors([ALICE, BOB, "nobody"]) == {
        ALICE: 6,
        BOB: 3,
        "nobody": 0,
    }
    page = await sql_store.changes_after(ALICE, 2, limit=2)
    assert [c.cursor for c in page.changes] == [3, 4]
    assert (page.latest_cursor, page.oldest_cursor) == (6, 1)
    times = [c.change_time for c in await _all(sql_store)]
    assert times == sorted(times)


async def test_a_failed_write_and_an_idempotent_replay_append_nothing(
    sql_store: SqlStore,
) -> None:
    key = idem("req-1")
    with change_sink.collecting() as sink:
        await _append(sql_store, "c", "x", idempotency=key)
    first = sink.cursor
    assert first == await _latest(sql_store) == 2
    with change_sink.collecting() as sink:
        await _append(sql_store, "c", "x", idempotency=key)
    assert sink.cursor == first  # the replay answers the recorded cursor
    with change_sink.collecting() as sink, pytest.raises(Aborted):
        await sql_store.update_conversation_metadata(ALICE, "c", {}, expected_etag="stale")
    assert sink.cursor == 0
    assert await _latest(sql_store) == 2


async def test_erasure_keeps_the_counter_and_leaves_only_its_change(
    sql_store: SqlStore, database: Database
) -> None:
    for n in range(3):
        await sql_store.save_state(DEFAULT, f"s{n}", [], expected_etag=None)
    await sql_store.save_state(ConversationKey(BOB, ""), "b", [], expected_etag=None)
    user_data = SqlUserData(database)

    receipt = await user_data.erase_user(ALICE)

    assert receipt.deleted_rows["changes"] == 3
    found = await _all(sql_store)
    assert [(c.cursor, c.operation, c.resource_name, c.state) for c in found] == [
        (4, ChangeOperation.ERASE, U, None)
    ]
    # A cursor from before the erasure is not expired: it resumes at the erasure.
    page = await sql_store.changes_after(ALICE, 1, limit=10)
    assert [c.cursor for c in page.changes] == [4]
    assert (page.latest_cursor, page.oldest_cursor) == (4, 4)
    # The cursors keep growing; a second erasure counts no data change.
    await sql_store.save_state(DEFAULT, "again", [], expected_etag=None)
    assert [c.cursor for c in await _all(sql_store)] == [4, 5]
    again = await user_data.erase_user(ALICE)
    assert again.deleted_rows["changes"] == 1
    assert [c.cursor for c in await _all(sql_store)] == [6]
    # Only the ERASE change and the counter remain; an import is still allowed.
    await user_data.import_user(ALICE, UserData())
    assert [c.cursor for c in await _all(sql_store, BOB)] == [1]


async def test_import_appends_a_change_per_resource(
    sql_store: SqlStore, database: Database
) -> None:
    await sql_store.save_state(DEFAULT, "s", [exchange(1)], expected_etag=None)
    await _append(sql_store, "c", "x")
    await save(sql_store, "m1", draft("fact"))
    originals = await _all(sql_store)
    user_data = SqlUserData(database)
    conversation = await sql_store.get_conversation(ALICE, "c")
    listed = await sql_store.list_messages(ALICE, "c", start_position=0, limit=10)
    state = await sql_store.get_state(DEFAULT)
    memory = await sql_store.get_memory(ALICE, "m1")
    data = UserData(
        conversations=(conversation,),
        states=(ConversationState("", state),),
        messages=tuple(ConversationMessage("c", m) for m in listed.items),
        memories=(memory,),
    )
    await user_data.import_user(BOB, _as_bob(data))
    imported = await _all(sql_store, BOB)
    assert _summary(imported) == [
        ("upsert", "users/bob/conversations/c", "Conversation"),
        ("upsert", "users/bob/memoryState", "MemoryState"),
        ("upsert", "users/bob/conversations/c/messages/0", "StoredMessage"),
        ("upsert", "users/bob/memories/m1", "Memory"),
    ]
    assert [c.etag for c in imported] == [conversation.etag, state.etag, "", memory.etag]
    assert len(originals) == 4


def _as_bob(data: UserData) -> UserData:
    return dataclasses.replace(
        data,
        conversations=tuple(dataclasses.replace(c, user_id=BOB) for c in data.conversations),
        memories=tuple(dataclasses.replace(m, user_id=BOB) for m in data.memories),
    )


async def test_a_private_delete_strips_the_earlier_states(sql_store: SqlStore) -> None:
    await save(sql_store, "m1", draft("secret one", key="k"))
    await sql_store.update_memory(ALICE, "m1", MemoryChange(text="secret two"), expected_etag=None)
    await save(sql_store, "m2", draft("kept"))
    await sql_store.propose_candidates(
        ALICE,
        [CandidateDraft(candidate_id="c1", draft=draft("secret three"), extractor="t")],
        idempotency=None,
    )
    await sql_store.approve_candidate(ALICE, "c1", memory_id="m3")

    for memory_id in ("m1", "m3"):
        await sql_store.delete_memory(ALICE, memory_id, expected_etag=None)

    found = await _all(sql_store)
    assert [(c.resource_name.rsplit("/", 1)[1], type(c.state).__name__) for c in found] == [
        ("m1", "NoneType"),
        ("m1", "NoneType"),
        ("m2", "Memory"),
        ("c1", "NoneType"),
        ("m3", "NoneType"),
        ("c1", "NoneType"),
        ("m1", "MemoryTombstone"),
        ("m3", "MemoryTombstone"),
    ]
    assert found[1].etag  # the etag stays; only the state goes
    assert isinstance(found[-1].state, MemoryTombstone)


async def test_clears_strip_what_they_cleared_from_the_feed(sql_store: SqlStore) -> None:
    await _append(sql_store, "chat", "secret message")
    await _append(sql_store, "other", "kept message")
    await sql_store.remember(
        DEFAULT,
        exchange(1),
        keep_recent=3,
        summary="secret summary",
        expected_etag=None,
        idempotency=None,
    )
    await sql_store.remember(
        CHAT, exchange(2), keep_recent=3, summary=None, expected_etag=None, idempotency=None
    )

    await sql_store.clear_messages(ALICE, "chat")
    await sql_store.clear_state(DEFAULT, expected_etag=None)

    found = await _all(sql_store)
    kept = [c.resource_name for c in found if c.state is not None]
    assert f"{U}/conversations/other/messages/0" in kept
    assert f"{U}/conversations/chat/memoryState" in kept
    assert not any(n.startswith(f"{U}/conversations/chat/messages/") for n in kept), kept
    # The clear's own change keeps the (empty) state; the earlier ones lost theirs.
    states = [c for c in found if c.resource_name == f"{U}/memoryState"]
    assert [c.state is None for c in states] == [True, False]
    cleared = states[-1].state
    assert isinstance(cleared, MemoryState) and (cleared.summary, cleared.recent) == ("", ())
    assert "secret" not in repr([c.state for c in found])
    assert "ask 1" not in repr([c.state for c in found])


async def test_a_purged_temporary_conversation_leaves_a_stateless_history(
    database: Database,
) -> None:
    store = SqlStore(database, temporary_ttl=timedelta(microseconds=1))
    await store.create_conversation(ALICE, "tmp", metadata={}, temporary=True, idempotency=None)
    await store.create_conversation(ALICE, "keep", metadata={}, temporary=False, idempotency=None)
    assert await store.purge_expired_conversations(limit=10) == 1
    found = await _all(store)
    assert _summary(found) == [
        ("upsert", f"{U}/conversations/tmp", ""),
        ("upsert", f"{U}/conversations/keep", "Conversation"),
        ("delete", f"{U}/conversations/tmp", ""),
    ]


async def test_pruning_expires_older_cursors_and_keeps_the_counter(
    sql_store: SqlStore, database: Database
) -> None:
    for n in range(4):
        await sql_store.save_state(DEFAULT, f"s{n}", [], expected_etag=None)
    await sql_store.save_state(ConversationKey(BOB, ""), "b", [], expected_etag=None)
    cutoff = (await _all(sql_store))[2].change_time
    # Alice's cursors 1 and 2 are older than the third change: pruned, in two batches.
    deleted = await sql_store.prune_changes(older_than_micros=to_micros(cutoff), limit=1)
    deleted += await sql_store.prune_changes(older_than_micros=to_micros(cutoff), limit=10)
    assert deleted == 2
    page = await sql_store.changes_after(ALICE, 0, limit=10)
    assert [c.cursor for c in page.changes] == [3, 4]
    assert (page.latest_cursor, page.oldest_cursor) == (4, 3)
    assert [c.cursor for c in (await sql_store.changes_after(ALICE, 2, limit=10)).changes] == [
        3,
        4,
    ]
    with pytest.raises(OutOfRange) as expired:
        await sql_store.changes_after(ALICE, 1, limit=10)
    assert expired.value.reason == "CURSOR_EXPIRED"
    assert expired.value.metadata["oldest_cursor"] == "3"
    assert (await sql_store.changes_after(ALICE, 9, limit=10)).changes == ()

    # Everything pruned: the counter stays, the next change is 5.
    assert await sql_store.prune_changes(older_than_micros=now_micros() + 1, limit=100) == 3
    page = await sql_store.changes_after(ALICE, 4, limit=10)
    assert (page.changes, page.latest_cursor, page.oldest_cursor) == ((), 4, 5)
    with pytest.raises(OutOfRange):
        await sql_store.changes_after(ALICE, 3, limit=10)
    await sql_store.save_state(DEFAULT, "later", [], expected_etag=None)
    assert [c.cursor for c in await _all(sql_store)] == [5]
    counters = await database.read(
        lambda conn: conn.execute(select(func.count()).select_from(change_cursors)).scalar_one()
    )
    assert counters == 2
    rows = await database.read(
        lambda conn: conn.execute(select(func.count()).select_from(changes)).scalar_one()
    )
    assert rows == 1


async def test_the_sink_follows_the_committed_attempt_under_both_runners(
    runner_database: Database,
) -> None:
    store = SqlStore(runner_database)
    attempts = 0

    def append_then_retry(conn: Connection) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:  # appends, then rolls back: the cursor it reported is taken back
            sql_changes.append(conn, ALICE, [sql_changes.upsert(f"{U}/memoryState", MemoryState())])
            raise RetryTransaction()

    with change_sink.collecting() as sink:
        await store.save_state(DEFAULT, "s", [], expected_etag=None)
        assert sink.cursor == 1
        await runner_database.write(append_then_retry)
        assert (attempts, sink.cursor) == (2, 1)
        await store.save_state(DEFAULT, "t", [], expected_etag=None)
        assert sink.cursor == 2
    assert [c.cursor for c in await _all(store)] == [1, 2]


async def test_every_change_converts_to_its_api_message(sql_store: SqlStore) -> None:
    await sql_store.save_state(CHAT, "s", [exchange(1)], expected_etag=None)
    await _append(sql_store, "chat", "x")
    await sql_store.record_failed_run(
        ALICE,
        "chat",
        run_id="r",
        error=RunError("boom"),
        messages=messages("p"),
        idempotency=None,
    )
    await save(sql_store, "m1", draft("fact"))
    await save(sql_store, "m2", draft("private"))
    await sql_store.delete_memory(ALICE, "m2", expected_etag=None)
    await sql_store.propose_candidates(
        ALICE,
        [CandidateDraft(candidate_id="c1", draft=draft("y"), extractor="t")],
        idempotency=None,
    )
    await sql_store.update_memory_settings(ALICE, enabled=True, expected_etag=None)
    await sql_store.set_consent(ALICE, ConsentState.GRANTED, "v1")
    found = await _all(sql_store)
    converted = changes_to_proto(tuple(found))
    assert [(c.cursor, c.WhichOneof("state")) for c in converted] == [
        (1, "conversation"),
        (2, "memory_state"),
        (3, "conversation"),
        (4, "message"),
        (5, "failed_run"),
        (6, "memory"),
        (7, None),  # the deleted entry's state is gone
        (8, "tombstone"),
        (9, "candidate"),
        (10, "memory_settings"),
        (11, "consent"),
    ]
    for change, message in zip(found, converted, strict=True):
        if change.state is None:
            continue
        named = getattr(message, message.WhichOneof("state") or "").name
        assert (message.resource_name, named) == (change.resource_name, change.resource_name)
        assert message.etag == change.etag
        assert message.operation in (
            sync_pb2.CHANGE_OPERATION_UPSERT,
            sync_pb2.CHANGE_OPERATION_DELETE,
        )
