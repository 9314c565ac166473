"""Long-term memory through a real server, with the blocking and the asyncio client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.client import (
    AlreadyExistsError,
    EtagMismatchError,
    FailedPreconditionError,
    InvalidArgumentError,
    MemoryCandidate,
    MnemoClient,
    NotFoundError,
    RequestIdReusedError,
)
from mnemo.client import _memories as memories
from mnemo.v1 import memories_pb2 as mm


def test_save_read_list_update_and_delete(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    first = client.create_memory(user, "Lives in Lyon", key="home", metadata={"from": "chat"})
    second = client.create_memory(user, "Lives in Paris", key="home", pinned=True)
    assert list(second.archived) == [first.memory.name]
    scoped = client.create_memory(user, "Wants short answers here", conversation="c1")
    assert (scoped.memory.scope, scoped.memory.conversation) == (
        mm.MEMORY_SCOPE_CONVERSATION,
        f"users/{user}/conversations/c1",
    )

    assert other_client.get_memory(user, second.memory.name) == second.memory  # a name works
    memory_id = second.memory.name.rsplit("/", 1)[1]
    assert client.get_memory(user, memory_id) == second.memory  # and so does an id
    assert [m.text for m in client.list_memories(user)] == [
        "Wants short answers here",
        "Lives in Paris",
    ]
    assert [m.text for m in client.list_memories(user, include_archived=True, page_size=1)] == [
        "Wants short answers here",
        "Lives in Paris",
        "Lives in Lyon",
    ]
    assert [m.text for m in client.list_memories(user, scope="identity")] == ["Lives in Paris"]
    page = client.list_memories_page(user, key="home", include_archived=True, page_size=1)
    assert len(page.items) == 1 and page.next_page_token

    updated = client.update_memory(
        user, memory_id, text="Lives in Paris, 11e", etag=second.memory.etag
    )
    assert updated.text == "Lives in Paris, 11e" and updated.pinned
    with pytest.raises(EtagMismatchError):
        client.update_memory(user, memory_id, pinned=False, etag=second.memory.etag)
    unpinned = client.update_memory(user, memory_id, pinned=False, metadata={"k": "v"})
    assert (unpinned.text, unpinned.pinned, dict(unpinned.metadata)) == (
        "Lives in Paris, 11e",
        False,
        {"k": "v"},
    )
    assert [m.text for m in client.list_memory_versions(user, memory_id)] == [
        "Lives in Paris, 11e",
        "Lives in Paris, 11e",
        "Lives in Paris",
        "Lives in Lyon",
    ]

    tombstone = client.delete_memory(user, memory_id)
    assert (tombstone.name, tombstone.key) == (second.memory.name, "home")
    with pytest.raises(NotFoundError):
        other_client.get_memory(user, memory_id)


def test_ids_request_ids_and_limits(client: MnemoClient, user: str) -> None:
    saved = client.create_memory(user, "Offline note", memory_id="phone-1", request_id="r-1")
    assert saved.memory.name == f"users/{user}/memories/phone-1"
    assert (
        client.create_memory(user, "Offline note", memory_id="phone-1", request_id="r-1") == saved
    )
    with pytest.raises(AlreadyExistsError):
        client.create_memory(user, "Another note", memory_id="phone-1")
    with pytest.raises(InvalidArgumentError) as raised:
        client.create_memory(user, "x" * 4097, key="k" * 300)
    assert raised.value.reason == "FIELD_TOO_LARGE"
    assert [v.field for v in raised.value.field_violations] == ["memory.text", "memory.key"]
    with pytest.raises(InvalidArgumentError) as refused:
        client.create_memory(user, "x", scope="galaxy")  # type: ignore[arg-type]
    assert refused.value.field_violations[0].field == "scope"  # refused before sending


def test_recall_streams_hits_and_builds_the_context(client: MnemoClient, user: str) -> None:
    client.create_memory(user, "Plans a trip to Kyoto in spring", embedding=("t4", [0, 0, 1, 0]))
    client.create_memory(
        user, "Trip budget is tight", embedding=mm.Embedding(model="t4", values=[1, 0, 0, 0])
    )
    client.create_memory(user, "Prefers aisle seats", conversation="c1")

    hits = list(client.recall_memories(user, "Kyoto trip"))
    assert [(h.rank, h.memory.text) for h in hits] == [
        (1, "Plans a trip to Kyoto in spring"),
        (2, "Trip budget is tight"),
    ]
    # Every query term: the lexical calibration's relevance of a full share.
    assert hits[0].score > hits[1].score and 0.5 < hits[0].score < 1
    assert list(hits[0].signals) == [mm.RECALL_SIGNAL_LEXICAL]
    fused = client.recall_memories(  # equal lexical shares, told apart by the cosines
        user, "trip", semantic=True, query_embedding=("t4", [1, 0.1, 0, 0])
    )
    assert [h.memory.text for h in fused] == [
        "Trip budget is tight",
        "Plans a trip to Kyoto in spring",
    ]
    assert [h.memory.text for h in client.recall_memories(user, "seats")] == []
    seats = client.recall_memories(user, "seats", conversation="c1", scope="conversation")
    assert [h.memory.text for h in seats] == ["Prefers aisle seats"]
    assert [h.memory.text for h in client.recall_memories(user, "trip", max_results=1)] == [
        "Trip budget is tight"
    ]
    with pytest.raises(FailedPreconditionError) as raised:
        list(client.recall_memories(user, "trip", semantic=True))
    assert raised.value.reason == "EMBEDDER_UNAVAILABLE"

    context = client.build_context(user, "Kyoto trip", max_bytes=40)
    assert context.used_bytes <= 40
    assert context.system_message.endswith("\n- Plans a trip to Kyoto in spring")
    assert client.build_context(user, "Kyoto trip", max_bytes=40) == context
    # The minimum relevance per request (this server has no embedder: lexical
    # recall keeps every match unless asked); nothing relevant injects nothing.
    assert list(client.recall_memories(user, "Kyoto trip", min_score=0.99)) == []
    above = client.recall_memories(user, "Kyoto trip", min_score=hits[0].score)
    assert [h.memory.text for h in above] == ["Plans a trip to Kyoto in spring"]
    nothing = client.build_context(user, "Kyoto trip", min_score=0.99)
    assert (nothing.system_message, list(nothing.memories), nothing.used_bytes) == ("", [], 0)
    assert client.build_context(user, "Kyoto trip", max_bytes=40, min_score=0) == context


def test_batch_create_saves_all_or_nothing_and_retries_once(client: MnemoClient, user: str) -> None:
    saved = client.batch_create_memories(
        user,
        [
            {"text": "Lives in Lyon", "key": "home", "memory_id": "phone-1"},
            {"text": "Lives in Paris", "key": "home", "embedding": ("t4", [1, 0, 0, 0])},
            mm.Memory(text="Owns a kayak", source=mm.MEMORY_SOURCE_IMPORT),
            mm.CreateMemoryRequest(memory_id="phone-2", memory=mm.Memory(text="Likes tea")),
            {"text": "Wants French here", "conversation": "c1"},
        ],
        request_id="bulk-1",
    )
    assert [m.text for m in saved.memories] == [
        "Lives in Lyon",
        "Lives in Paris",
        "Owns a kayak",
        "Likes tea",
        "Wants French here",
    ]
    lyon, paris, kayak, tea, french = saved.memories
    assert (lyon.name, tea.name) == (
        f"users/{user}/memories/phone-1",
        f"users/{user}/memories/phone-2",
    )
    assert list(saved.archived) == [lyon.name] and lyon.HasField("archive_time")
    assert kayak.source == mm.MEMORY_SOURCE_IMPORT
    assert french.scope == mm.MEMORY_SCOPE_CONVERSATION
    entries = [{"text": "Has a dog"}, {"text": "Has a cat", "key": "pet"}]
    first = client.batch_create_memories(user, entries)  # a fresh request id, sent once
    second = client.batch_create_memories(user, entries, request_id="bulk-2")
    # Sameness (issue 26): the same facts again store nothing and name the live entries.
    assert [m.name for m in second.memories] == [m.name for m in first.memories]
    assert list(second.outcomes) == [mm.SAVE_OUTCOME_DUPLICATE] * 2
    assert client.batch_create_memories(user, entries, request_id="bulk-2") == second
    with pytest.raises(RequestIdReusedError):
        client.batch_create_memories(user, entries[:1], request_id="bulk-2")
    with pytest.raises(InvalidArgumentError) as refused:
        client.batch_create_memories(user, [{"text": "fine"}, {"text": ""}])
    assert [v.field for v in refused.value.field_violations] == ["requests[1].memory.text"]
    with pytest.raises(AlreadyExistsError):
        client.batch_create_memories(user, [{"text": "again", "memory_id": "phone-1"}])
    assert len(list(client.list_memories(user, include_archived=True))) == 7


def test_event_time_is_sent_by_create_and_batch_and_same_facts_are_stored_once(
    client: MnemoClient, user: str
) -> None:
    january, march = datetime(2026, 1, 5, 9, 30, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
    berlin = client.create_memory(user, "Lives in Berlin", key="home", event_time=march)
    assert berlin.outcome == mm.SAVE_OUTCOME_CREATED
    stored = client.get_memory(user, berlin.memory.name)
    assert stored.event_time.ToDatetime(UTC) == march
    older = client.create_memory(user, "Lives in Lyon", key="home", event_time=january)
    assert older.outcome == mm.SAVE_OUTCOME_HISTORICAL  # a later fact of the key stays current
    assert older.memory.valid_until.ToDatetime(UTC) == march
    naive = client.create_memory(user, "Has a cat", event_time=datetime(2026, 1, 5, 9, 30))
    assert naive.memory.event_time.ToDatetime(UTC) == january  # a naive datetime is UTC

    again = client.create_memory(user, "has a CAT.", memory_id="phone-cat")
    assert again.outcome == mm.SAVE_OUTCOME_DUPLICATE
    assert again.memory.name == naive.memory.name  # the live entry, not phone-cat
    with pytest.raises(NotFoundError):
        client.get_memory(user, "phone-cat")

    batch = client.batch_create_memories(
        user,
        [
            {"text": "Plays chess", "event_time": january},
            {"text": "Plays go", "event_time": march},
            {"text": "plays chess"},
        ],
    )
    assert [m.event_time.ToDatetime(UTC) for m in batch.memories[:2]] == [january, march]
    assert list(batch.outcomes) == [
        mm.SAVE_OUTCOME_CREATED,
        mm.SAVE_OUTCOME_CREATED,
        mm.SAVE_OUTCOME_DUPLICATE,
    ]
    assert batch.memories[2].name == batch.memories[0].name
    texts = sorted(m.text for m in client.list_memories(user))
    assert texts == ["Has a cat", "Lives in Berlin", "Plays chess", "Plays go"]

    with pytest.raises(InvalidArgumentError) as refused:
        client.create_memory(
            user, "From the future", event_time=datetime.now(UTC) + timedelta(days=3)
        )
    assert [v.field for v in refused.value.field_violations] == ["memory.event_time"]


def test_extraction_candidates_and_approval(client: MnemoClient, user: str) -> None:
    found = client.extract_memories(
        user,
        [
            {"role": "user", "content": "My name is Ada and I'm allergic to peanuts"},
            {"role": "assistant", "content": "Noted!"},
        ],
        conversation="c1",
        run_id="run-1",
        turn=4,
        require_approval=True,
    )
    assert sorted(c.memory.text for c in found.candidates) == [
        "The user is allergic to peanuts.",
        "The user's name is Ada.",
    ]
    assert {(c.conversation, c.run_id, c.turn) for c in found.candidates} == {
        (f"users/{user}/conversations/c1", "run-1", 4)
    }
    assert len(list(client.list_memory_candidates(user))) == 2
    allergy = next(c for c in found.candidates if "peanuts" in c.memory.text)
    approved = client.approve_memory_candidate(user, allergy.name)
    assert approved.memory.source == mm.MEMORY_SOURCE_EXTRACTOR
    again = client.approve_memory_candidate(user, allergy.name.rsplit("/", 1)[1])
    assert (again.memory, again.candidate, again.change_cursor) == (
        approved.memory,
        approved.candidate,
        0,  # changes nothing
    )
    other = next(c for c in found.candidates if c.name != allergy.name)
    assert client.reject_memory_candidate(user, other.name).state == mm.CANDIDATE_STATE_REJECTED
    with pytest.raises(FailedPreconditionError) as raised:
        client.reject_memory_candidate(user, allergy.name)
    assert raised.value.reason == "CANDIDATE_RESOLVED"
    assert list(client.list_memory_candidates(user)) == []
    assert len(client.list_memory_candidates_page(user, include_resolved=True).items) == 2

    saved = client.extract_memories(user, [{"role": "user", "content": "I live in Lisbon."}])
    assert [m.text for m in saved.memories] == ["The user lives in Lisbon."]

    proposed = client.propose_memory_candidates(
        user,
        [
            {"text": "Runs marathons", "key": "sport", "conversation": "c2", "turn": 1},
            {"text": "Wants French here", "scope": "conversation", "conversation": "c2"},
            MemoryCandidate(memory=mm.Memory(text="Owns a kayak"), extractor="app-llm"),
        ],
    )
    assert [c.memory.text for c in proposed] == [
        "Runs marathons",
        "Wants French here",
        "Owns a kayak",
    ]
    marathons, french, kayak = proposed
    assert (marathons.memory.scope, marathons.conversation, marathons.turn) == (
        mm.MEMORY_SCOPE_IDENTITY,
        f"users/{user}/conversations/c2",
        1,
    )
    assert french.memory.conversation == f"users/{user}/conversations/c2"
    assert kayak.extractor == "app-llm"


def test_builders_send_only_what_is_given() -> None:
    update = memories.update_memory("u1", "m1", pinned=True).request
    assert (
        list(update.update_mask.paths) == ["pinned"]
        and update.memory.name == "users/u1/memories/m1"
    )
    assert not update.memory.HasField("embedding")
    assert memories.create_memory("u1", "x").request.request_id
    with pytest.raises(InvalidArgumentError):
        memories.get_memory("u1", "users/u2/memories/m1")  # another user's name is a path
