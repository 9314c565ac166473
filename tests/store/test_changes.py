"""The change feed in the store: every mutation appends its changes (kind,
resource, etag, state) in its transaction; cursors are dense, grow per user
and are independent across users; an erasure keeps the counter growing and
leaves only its ERASE change; a private delete strips the earlier states;
pruning keeps the counter and expires older cursors. On every backend."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from mnemo.v1 import sync_pb2
from mnemo_server.api.sync.convert import changes_to_proto
from mnemo_server.domain.changes import Change, ChangeOperation
from mnemo_server.domain.commands import Written
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
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.rows import now_micros, to_micros
from mnemo_server.store.schema import change_cursors, changes
from mnemo_server.store.transactions.database import Database, RetryTransaction, Tx
from mnemo_server.store.user_data.store import SqlUserData
from tests.store.memory_samples import draft, save
from tests.store.samples import exchange, idem, messages
from tests.store.writes import (
    append_messages_written,
    approve_candidate,
    clear_messages,
    clear_state,
    create_conversation,
    delete_conversation,
    delete_memory,
    erase_user,
    import_user,
    propose_candidates,
    record_failed_run,
    reject_candidate,
    remember,
    replace_history_prefix,
    save_state,
    save_state_written,
    set_consent,
    update_conversation,
    update_memory,
    update_memory_settings,
)

ALICE, BOB = "alice", "bob"
CHAT = ConversationKey(ALICE, "chat")
DEFAULT = ConversationKey(ALICE, "")
U = "users/alice"


async def _all(store: SqlStore, user_id: str = ALICE, after: int = 0) -> list[Change]:
    page = await store.feed.changes_after(user_id, after, limit=1000, caller=None)
    return list(page.changes)


def _summary(found: list[Change]) -> list[tuple[str, str, str]]:
    return [
        (c.operation.value, c.resource_name, "" if c.state is None else type(c.state).__name__)
        for c in found
    ]


async def _append_written(
    store: SqlStore, conversation_id: str, *texts: str, idempotency: Idempotency | None = None
) -> Written[AppendResult]:
    return await append_messages_written(
        store, ALICE, conversation_id, messages(*texts), run_id="r", turn=1, idempotency=idempotency
    )


async def _append(store: SqlStore, conversation_id: str, *texts: str) -> AppendResult:
    return (await _append_written(store, conversation_id, *texts)).value


async def _latest(store: SqlStore, user_id: str = ALICE) -> int:
    return (await store.feed.latest_cursors([user_id]))[user_id]


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
    saved = await save_state(store, DEFAULT, "s", [exchange(1)])
    (change,) = await since()
    assert (change.operation, change.resource_name, change.etag) == (
        ChangeOperation.UPSERT,
        f"{U}/memoryState",
        saved.etag,
    )
    assert change.state == saved
    remembered = await remember(store, CHAT, exchange(2), keep_recent=3)
    assert _summary(await since()) == [  # the conversation was created implicitly
        ("upsert", f"{U}/conversations/chat", "Conversation"),
        ("upsert", f"{U}/conversations/chat/memoryState", "MemoryState"),
    ]
    cleared = await clear_state(store, CHAT, expected_etag=remembered.state.etag)
    (change,) = await since()
    assert (change.etag, change.state) == (cleared.etag, cleared)

    # Conversations and history.
    created = await create_conversation(store, ALICE, "c2", metadata={"a": 1})
    (change,) = await since()
    assert (change.resource_name, change.etag, change.state) == (
        f"{U}/conversations/c2",
        created.etag,
        created,
    )
    updated = await update_conversation(store, ALICE, "c2", {"b": 2})
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
    run = await record_failed_run(
        store, ALICE, "c2", run_id="r2", error=RunError("boom"), messages=messages("partial")
    )
    (change,) = await since()
    assert (change.resource_name, change.state) == (
        f"{U}/conversations/c2/failedRuns/{run.failed_run_id}",
        run,
    )
    snapshot = await store.conversations.snapshot_history(ALICE, "c2")
    await replace_history_prefix(
        store,
        ALICE,
        "c2",
        revision=snapshot.revision,
        message_count=1,
        replacement=messages("summary"),
        run_id="r3",
    )
    assert _summary(await since()) == [("upsert", f"{U}/conversations/c2", "Conversation")]
    emptied = await clear_messages(store, ALICE, "c2")
    (change,) = await since()
    assert isinstance(change.state, Conversation) and change.state.message_count == 0
    assert change.etag == emptied.etag
    await delete_conversation(store, ALICE, "c2")
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
    changed = await update_memory(store, ALICE, "m2", MemoryChange(text="espresso"))
    (change,) = await since()
    assert (change.etag, change.state) == (changed.etag, changed)
    tombstone = await delete_memory(store, ALICE, "m2")
    (change,) = await since()
    assert (change.operation, change.state) == (ChangeOperation.DELETE, tombstone)

    # Candidates: propose, approve (an entry and the candidate), reject.
    proposals = [
        CandidateDraft(candidate_id=c, draft=draft(f"fact {c}"), extractor="t")
        for c in ("c1", "c2")
    ]
    await propose_candidates(store, ALICE, proposals)
    assert _summary(await since()) == [
        ("upsert", f"{U}/memoryCandidates/c1", "MemoryCandidate"),
        ("upsert", f"{U}/memoryCandidates/c2", "MemoryCandidate"),
    ]
    await approve_candidate(store, ALICE, "c1", memory_id="m3")
    assert _summary(await since()) == [
        ("upsert", f"{U}/memories/m3", "Memory"),
        ("upsert", f"{U}/memoryCandidates/c1", "MemoryCandidate"),
    ]
    await approve_candidate(store, ALICE, "c1", memory_id="m3")  # already approved: no change
    assert await since() == []
    await reject_candidate(store, ALICE, "c2")
    assert _summary(await since()) == [("upsert", f"{U}/memoryCandidates/c2", "MemoryCandidate")]

    # Settings and consent (a withdrawal cancels the pending candidates).
    settings = await update_memory_settings(store, ALICE, enabled=True)
    (change,) = await since()
    assert (change.resource_name, change.etag, change.state) == (
        f"{U}/memorySettings",
        settings.etag,
        settings,
    )
    await propose_candidates(
        store, ALICE, [CandidateDraft(candidate_id="c3", draft=draft("x"), extractor="t")]
    )
    await since()
    consent = await set_consent(store, ALICE, ConsentState.WITHDRAWN, "v1")
    found = await since()
    assert _summary(found) == [
        ("upsert", f"{U}/consent", "Consent"),
        ("upsert", f"{U}/memoryCandidates/c3", "MemoryCandidate"),
    ]
    assert found[0].state == consent.consent
    await set_consent(store, ALICE, ConsentState.WITHDRAWN, "v1")  # unchanged: no change
    assert await since() == []


async def test_cursors_are_dense_per_user_and_independent(sql_store: SqlStore) -> None:
    for n in range(3):
        await save_state(sql_store, DEFAULT, f"a{n}")
        await save_state(sql_store, ConversationKey(BOB, ""), f"b{n}")
    await _append(sql_store, "c", "x", "y")
    alice = [c.cursor for c in await _all(sql_store)]
    bob = [c.cursor for c in await _all(sql_store, BOB)]
    assert alice == list(range(1, 7))
    assert bob == [1, 2, 3]
    assert await sql_store.feed.latest_cursors([ALICE, BOB, "nobody"]) == {
        ALICE: 6,
        BOB: 3,
        "nobody": 0,
    }
    page = await sql_store.feed.changes_after(ALICE, 2, limit=2, caller=None)
    assert [c.cursor for c in page.changes] == [3, 4]
    assert (page.latest_cursor, page.oldest_cursor) == (6, 1)
    times = [c.change_time for c in await _all(sql_store)]
    assert times == sorted(times)


async def test_a_failed_write_and_an_idempotent_replay_append_nothing(
    sql_store: SqlStore,
) -> None:
    key = idem("req-1")
    first = await _append_written(sql_store, "c", "x", idempotency=key)
    assert first.change_cursor == await _latest(sql_store) == 2
    again = await _append_written(sql_store, "c", "x", idempotency=key)
    assert again.change_cursor == first.change_cursor  # the replay answers the recorded cursor
    with pytest.raises(Aborted):
        await update_conversation(sql_store, ALICE, "c", {}, expected_etag="stale")
    assert await _latest(sql_store) == 2
    # Neither took a cursor: the next change is the third.
    assert (await save_state_written(sql_store, DEFAULT, "s")).change_cursor == 3


async def test_erasure_keeps_the_counter_and_leaves_only_its_change(
    sql_store: SqlStore, database: Database
) -> None:
    for n in range(3):
        await save_state(sql_store, DEFAULT, f"s{n}")
    await save_state(sql_store, ConversationKey(BOB, ""), "b")
    user_data = SqlUserData(database)

    receipt = await erase_user(user_data, ALICE)

    assert receipt.erased.deleted_rows["changes"] == 3
    found = await _all(sql_store)
    assert [(c.cursor, c.operation, c.resource_name, c.state) for c in found] == [
        (4, ChangeOperation.ERASE, U, None)
    ]
    # A cursor from before the erasure is not expired: it resumes at the erasure.
    page = await sql_store.feed.changes_after(ALICE, 1, limit=10, caller=None)
    assert [c.cursor for c in page.changes] == [4]
    assert (page.latest_cursor, page.oldest_cursor) == (4, 4)
    # An erasure that finds nothing to delete appends nothing.
    nothing = await erase_user(user_data, ALICE)
    assert not any(nothing.erased.deleted_rows.values())
    assert [c.cursor for c in await _all(sql_store)] == [4]
    # The cursors keep growing; a second erasure that deletes something
    # replaces the earlier ERASE change: a user keeps one.
    await save_state(sql_store, DEFAULT, "again")
    assert [c.cursor for c in await _all(sql_store)] == [4, 5]
    again = await erase_user(user_data, ALICE)
    assert again.erased.deleted_rows["changes"] == 2
    assert [c.cursor for c in await _all(sql_store)] == [6]
    # Only the ERASE change and the counter remain; an import is still allowed.
    await import_user(user_data, ALICE, UserData())
    assert [c.cursor for c in await _all(sql_store, BOB)] == [1]


async def test_import_appends_a_change_per_resource(
    sql_store: SqlStore, database: Database
) -> None:
    await save_state(sql_store, DEFAULT, "s", [exchange(1)])
    await _append(sql_store, "c", "x")
    await save(sql_store, "m1", draft("fact"))
    originals = await _all(sql_store)
    user_data = SqlUserData(database)
    conversation = await sql_store.conversations.get_conversation(ALICE, "c")
    listed = await sql_store.conversations.list_messages(ALICE, "c", start_position=0, limit=10)
    state = await sql_store.conversations.get_state(DEFAULT)
    memory = await sql_store.memories.get_memory(ALICE, "m1")
    data = UserData(
        conversations=(conversation,),
        states=(ConversationState("", state),),
        messages=tuple(ConversationMessage("c", m) for m in listed.items),
        memories=(memory,),
    )
    await import_user(user_data, BOB, _as_bob(data))
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
    await update_memory(sql_store, ALICE, "m1", MemoryChange(text="secret two"))
    await save(sql_store, "m2", draft("kept"))
    await propose_candidates(
        sql_store,
        ALICE,
        [CandidateDraft(candidate_id="c1", draft=draft("secret three"), extractor="t")],
    )
    await approve_candidate(sql_store, ALICE, "c1", memory_id="m3")

    for memory_id in ("m1", "m3"):
        await delete_memory(sql_store, ALICE, memory_id)

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
    await remember(sql_store, DEFAULT, exchange(1), keep_recent=3, summary="secret summary")
    await remember(sql_store, CHAT, exchange(2), keep_recent=3)

    await clear_messages(sql_store, ALICE, "chat")
    await clear_state(sql_store, DEFAULT)

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
    store = SqlStore(database)
    await create_conversation(store, ALICE, "tmp", temporary=True, lifetime_micros=1)
    await create_conversation(store, ALICE, "keep")
    assert await store.conversations.purge_expired_conversations(limit=10) == 1
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
        await save_state(sql_store, DEFAULT, f"s{n}")
    await save_state(sql_store, ConversationKey(BOB, ""), "b")
    cutoff = (await _all(sql_store))[2].change_time
    # Alice's cursors 1 and 2 are older than the third change: pruned, in two batches.
    deleted = await sql_store.feed.prune_changes(older_than_micros=to_micros(cutoff), limit=1)
    deleted += await sql_store.feed.prune_changes(older_than_micros=to_micros(cutoff), limit=10)
    assert deleted == 2
    page = await sql_store.feed.changes_after(ALICE, 0, limit=10, caller=None)
    assert [c.cursor for c in page.changes] == [3, 4]
    assert (page.latest_cursor, page.oldest_cursor) == (4, 3)
    assert [
        c.cursor
        for c in (await sql_store.feed.changes_after(ALICE, 2, limit=10, caller=None)).changes
    ] == [
        3,
        4,
    ]
    with pytest.raises(OutOfRange) as expired:
        await sql_store.feed.changes_after(ALICE, 1, limit=10, caller=None)
    assert expired.value.reason == "CURSOR_EXPIRED"
    assert expired.value.metadata["oldest_cursor"] == "3"
    assert (await sql_store.feed.changes_after(ALICE, 4, limit=10, caller=None)).changes == ()
    with pytest.raises(OutOfRange) as ahead:  # not a cursor of this database
        await sql_store.feed.changes_after(ALICE, 9, limit=10, caller=None)
    assert (ahead.value.reason, ahead.value.metadata["latest_cursor"]) == ("CURSOR_AHEAD", "4")

    # Everything pruned: the counter stays, the next change is 5.
    assert await sql_store.feed.prune_changes(older_than_micros=now_micros() + 1, limit=100) == 3
    page = await sql_store.feed.changes_after(ALICE, 4, limit=10, caller=None)
    assert (page.changes, page.latest_cursor, page.oldest_cursor) == ((), 4, 5)
    with pytest.raises(OutOfRange):
        await sql_store.feed.changes_after(ALICE, 3, limit=10, caller=None)
    await save_state(sql_store, DEFAULT, "later")
    assert [c.cursor for c in await _all(sql_store)] == [5]
    counters = await database.read(
        lambda conn: conn.execute(select(func.count()).select_from(change_cursors)).scalar_one()
    )
    assert counters == 2
    rows = await database.read(
        lambda conn: conn.execute(select(func.count()).select_from(changes)).scalar_one()
    )
    assert rows == 1


def _retried_once(first_appends: int, then_appends: int) -> Callable[[Tx], int]:
    """A write whose first attempt appends ``first_appends`` changes and asks
    for a retry (rolled back, its cursors are taken back), and whose second
    appends ``then_appends``; it answers how many attempts it took."""
    attempts = 0
    change = change_log.upsert(f"{U}/memoryState", MemoryState())

    def write(tx: Tx) -> int:
        nonlocal attempts
        attempts += 1
        change_log.append(tx, ALICE, [change] * (first_appends if attempts == 1 else then_appends))
        if attempts == 1:
            raise RetryTransaction()
        return attempts

    return write


async def test_a_retried_write_reports_the_cursor_of_the_attempt_that_committed(
    sql_store: SqlStore, database: Database
) -> None:
    assert (await save_state_written(sql_store, DEFAULT, "s")).change_cursor == 1
    # The first attempt took cursors 2 and 3, then rolled back; the second took 2.
    assert await database.write(_retried_once(2, 1)) == (2, 2)
    # A committed attempt that appends nothing reports no cursor.
    assert await database.write(_retried_once(1, 0)) == (2, 0)
    assert (await save_state_written(sql_store, DEFAULT, "t")).change_cursor == 3
    assert [c.cursor for c in await _all(sql_store)] == [1, 2, 3]
    # Writes that share a transaction (each in its own savepoint) and are
    # retried: each reports the cursor of its own committed change.
    answered = await asyncio.gather(*(database.write(_retried_once(2, 1)) for _ in range(6)))
    assert [attempts for attempts, _ in answered] == [2] * 6
    assert sorted(cursor for _, cursor in answered) == [4, 5, 6, 7, 8, 9]
    assert [c.cursor for c in await _all(sql_store)] == list(range(1, 10))


async def test_every_change_converts_to_its_api_message(sql_store: SqlStore) -> None:
    await save_state(sql_store, CHAT, "s", [exchange(1)])
    await _append(sql_store, "chat", "x")
    await record_failed_run(
        sql_store, ALICE, "chat", run_id="r", error=RunError("boom"), messages=messages("p")
    )
    await save(sql_store, "m1", draft("fact"))
    await save(sql_store, "m2", draft("private"))
    await delete_memory(sql_store, ALICE, "m2")
    await propose_candidates(
        sql_store, ALICE, [CandidateDraft(candidate_id="c1", draft=draft("y"), extractor="t")]
    )
    await update_memory_settings(sql_store, ALICE, enabled=True)
    await set_consent(sql_store, ALICE, ConsentState.GRANTED, "v1")
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
