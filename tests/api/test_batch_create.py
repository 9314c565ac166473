"""BatchCreateMemories through a real server, on both backends: the same as
one CreateMemory per entry in order, in one transaction, all or nothing.

Order and names, keyed supersede within the batch and against stored
entries (compared with the same entries saved one at a time), a refused
entry that leaves nothing stored and is named by its index, the limits, ids
taken or repeated, idempotent retries, the change feed, the events and the
server's embedder (one ``embed`` call per batch). The gates are in
tests/api/test_gates.py's table, the statement counts in
tests/api/test_statement_counts.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import grpc
from sqlalchemy import select

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1 import sync_pb2_grpc
from mnemo_server.store.schema import idempotency_records
from tests.api.governance import GRANTED, WITHDRAWN, Governance, all_events, set_consent
from tests.api.memories import C1, USER, Stub, create, listed, recall, vector
from tests.support.embedding import wait_until_embedded
from tests.support.rpc_errors import rpc_failure
from tests.support.server import running_server
from tests.support.user_rows import connected

MAX_ENTRIES = 1000


def entry(
    text: str, *, memory_id: str = "", parent: str = "", **memory: Any
) -> pb.CreateMemoryRequest:
    """One entry of a batch: ``memory_id`` and ``parent`` on the request, the rest on the memory."""
    return pb.CreateMemoryRequest(
        parent=parent, memory_id=memory_id, memory=pb.Memory(text=text, **memory)
    )


def batch(
    stub: Stub,
    entries: Sequence[pb.CreateMemoryRequest],
    *,
    parent: str = USER,
    request_id: str = "",
) -> pb.BatchCreateMemoriesResponse:
    response: pb.BatchCreateMemoriesResponse = stub.BatchCreateMemories(
        pb.BatchCreateMemoriesRequest(parent=parent, requests=entries, request_id=request_id)
    )
    return response


def _refused(stub: Stub, entries: Sequence[pb.CreateMemoryRequest], **kw: Any) -> Any:
    return rpc_failure(
        stub.BatchCreateMemories, pb.BatchCreateMemoriesRequest(parent=USER, requests=entries, **kw)
    )


def _shape(memory: pb.Memory) -> tuple[Any, ...]:
    """What an entry is, apart from its user, id, times and etag."""
    return (
        memory.text,
        memory.key,
        memory.scope,
        memory.conversation.split("/")[-1],
        memory.source,
        dict(memory.metadata),
        memory.pinned,
        memory.HasField("archive_time"),
    )


def test_entries_are_saved_in_order_with_their_ids(memories: Stub) -> None:
    response = batch(
        memories,
        [
            entry("Prefers green tea", metadata={"origin": "chat"}, pinned=True),
            entry(
                "Order RMA-1234 is late",
                memory_id="order-1",
                parent=USER,
                key="order",
                scope=pb.MEMORY_SCOPE_CONVERSATION,
                conversation=C1,
            ),
            entry("Has a cat", source=pb.MEMORY_SOURCE_USER, embedding=vector(1, 0, 0, 0)),
        ],
    )
    tea, order, cat = response.memories
    assert [m.text for m in response.memories] == [
        "Prefers green tea",
        "Order RMA-1234 is late",
        "Has a cat",
    ]
    assert order.name == f"{USER}/memories/order-1" and order.conversation == C1
    assert tea.name.startswith(f"{USER}/memories/") and tea.pinned and tea.etag
    assert (tea.source, cat.source) == (pb.MEMORY_SOURCE_TOOL_CALL, pb.MEMORY_SOURCE_USER)
    assert not cat.HasField("embedding")  # input only, as for CreateMemory
    assert list(response.archived) == [] and response.change_cursor > 0
    for memory in response.memories:
        assert memories.GetMemory(pb.GetMemoryRequest(name=memory.name)).memory == memory
    assert {m.name for m in listed(memories)} == {tea.name, order.name, cat.name}
    hits = recall(memories, "cat", semantic=True, query_embedding=vector(1, 0, 0, 0))
    assert [h.memory.name for h in hits] == [cat.name]


def _chains(user: str) -> tuple[list[pb.CreateMemoryRequest], list[pb.CreateMemoryRequest]]:
    """Entries stored first, then entries that supersede them and each other."""
    c1 = f"{user}/conversations/c1"
    scoped = {"scope": pb.MEMORY_SCOPE_CONVERSATION, "conversation": c1}
    stored = [
        entry("Lives in Lyon", key="home"),
        entry("Staying in Rome", key="home", **scoped),
        entry("Drinks tea", key="drink"),
    ]
    entries = [
        entry("Lives in Paris", key="home"),
        entry("No key at all"),
        entry("Staying in Milan", key="home", **scoped),
        entry("Lives in Oslo", key="home"),
        entry("Drinks coffee", key="drink"),
        entry("Lives in Bergen", key="home"),
    ]
    return stored, entries


def test_a_batch_saves_what_one_create_per_entry_would(memories: Stub) -> None:
    """Keyed entries supersede stored entries and earlier entries of the same
    batch, chain by chain, exactly as the same saves one at a time."""
    one_by_one: list[list[str]] = []
    stored, entries = _chains("users/single")
    for item in [*stored, *entries]:
        item.parent = "users/single"
        archived = memories.CreateMemory(item).archived
        one_by_one.append([name.split("/")[-1] for name in archived])
    stored, entries = _chains("users/batched")
    for item in stored:
        memories.CreateMemory(pb.CreateMemoryRequest(parent="users/batched", memory=item.memory))

    batched = batch(memories, entries, parent="users/batched")
    ids = [m.name.split("/")[-1] for m in batched.memories]
    single_everything = listed(memories, parent="users/single", include_archived=True)
    batched_everything = listed(memories, parent="users/batched", include_archived=True)
    assert sorted(map(_shape, batched_everything)) == sorted(map(_shape, single_everything))
    assert [_shape(m) for m in listed(memories, parent="users/batched")] == [
        _shape(m) for m in listed(memories, parent="users/single")
    ]
    # Each response entry as it is stored now; superseded within the batch: archived.
    assert [m.HasField("archive_time") for m in batched.memories] == [
        True,
        False,
        False,
        True,
        False,
        False,
    ]
    for memory in batched.memories:
        assert memories.GetMemory(pb.GetMemoryRequest(name=memory.name)).memory == memory
    # ``archived``: what each entry archived, in order (stored entries by
    # their key; entries of the batch by the id the batch gave them).
    by_text = {m.text: m.name.split("/")[-1] for m in batched_everything}
    expected = [
        by_text["Lives in Lyon"],
        by_text["Staying in Rome"],
        ids[0],
        by_text["Drinks tea"],
        ids[3],
    ]
    assert [name.split("/")[-1] for name in batched.archived] == expected
    assert sum(map(len, one_by_one[len(stored) :])) == len(expected)


def test_one_bad_entry_refuses_the_batch_and_names_its_index(memories: Stub) -> None:
    create(memories, "Stored with a vector", embedding=vector(1, 0, 0, 0))
    good = [entry(f"Fact number {n}") for n in range(5)]

    blank = _refused(memories, [*good[:3], entry("   "), *good[3:]])
    assert (blank.code, blank.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    assert blank.fields == ("requests[3].memory.text",)

    several = _refused(
        memories,
        [
            entry("x" * 4097),
            *good,
            entry("ok", scope=7),
            entry("ok", conversation="users/u2/conversations/c"),
        ],
    )
    assert (
        several.reason == "FIELD_TOO_LARGE"
        and several.metadata["field"] == "requests[0].memory.text"
    )
    assert several.fields == (
        "requests[0].memory.text",
        "requests[6].memory.scope",
        "requests[7].memory.conversation",
    )

    # Found inside the transaction, after earlier entries were written: rolled back.
    mismatch = _refused(memories, [*good, entry("short", embedding=vector(1, 0))])
    assert (mismatch.code, mismatch.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "EMBEDDING_DIMENSION_MISMATCH",
    )
    assert mismatch.fields == ("requests[5].memory.embedding.values",)
    within = _refused(
        memories,
        [
            entry("a", embedding=vector(1, 2, model="m2")),
            entry("b", embedding=vector(1, model="m2")),
        ],
    )
    assert (within.reason, within.fields) == (
        "EMBEDDING_DIMENSION_MISMATCH",
        ("requests[1].memory.embedding.values",),
    )
    assert [m.text for m in listed(memories, include_archived=True)] == ["Stored with a vector"]


def test_ids_taken_or_repeated_are_already_exists_naming_the_entry(memories: Stub) -> None:
    saved = create(memories, "Offline fact", memory_id="phone-1")
    deleted = create(memories, "Deleted fact", memory_id="phone-2")
    memories.DeleteMemory(pb.DeleteMemoryRequest(name=deleted.name))
    single = rpc_failure(
        memories.CreateMemory,
        pb.CreateMemoryRequest(parent=USER, memory_id="phone-1", memory=pb.Memory(text="x")),
    )
    for taken_id in ("phone-1", "phone-2"):
        taken = _refused(
            memories, [entry("new", memory_id="new-1"), entry("x", memory_id=taken_id)]
        )
        assert (taken.code, taken.reason) == (single.code, single.reason)
        assert taken.metadata["name"] == f"{USER}/memories/{taken_id}"
        assert taken.fields == ("requests[1].memory_id",)
    assert single.fields == ("memory_id",) and single.metadata["name"] == saved.name

    repeated = _refused(
        memories,
        [entry("a", memory_id="dup"), entry("b"), entry("c", memory_id="dup")],
    )
    assert (repeated.code, repeated.reason) == (grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS")
    assert repeated.fields == ("requests[2].memory_id",)
    assert "requests[0].memory_id" in repeated.message
    assert [m.text for m in listed(memories, include_archived=True)] == ["Offline fact"]


def test_limits_and_the_shape_of_the_batch(memories: Stub) -> None:
    empty = _refused(memories, [])
    assert (empty.reason, empty.fields) == ("INVALID_FIELD", ("requests",))
    over = _refused(memories, [entry(f"f{n}") for n in range(MAX_ENTRIES + 1)])
    assert (over.code, over.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_TOO_LARGE")
    assert over.fields == ("requests",) and over.metadata["limit"] == str(MAX_ENTRIES)

    shape = _refused(
        memories,
        [
            entry("a", parent="users/u2"),
            entry("b", parent="users/u1/conversations/c1"),
            pb.CreateMemoryRequest(memory=pb.Memory(text="c"), request_id="own"),
            entry("d", memory_id="-bad"),
        ],
        request_id="x" * 129,
    )
    assert shape.fields == (
        "requests[0].parent",
        "requests[1].parent",
        "requests[2].request_id",
        "requests[3].memory_id",
        "request_id",
    )
    unnamed = rpc_failure(
        memories.BatchCreateMemories, pb.BatchCreateMemoriesRequest(requests=[entry("a")])
    )
    assert (unnamed.reason, unnamed.fields) == ("INVALID_NAME", ("parent",))
    assert listed(memories) == []

    # Every entry of a full batch bad: the error still arrives whole.
    all_bad = _refused(memories, [entry("") for _ in range(MAX_ENTRIES)])
    assert all_bad.reason == "INVALID_FIELD" and all_bad.fields[0] == "requests[0].memory.text"

    full = batch(
        memories, [entry(f"Fact {n}", embedding=vector(n, 1, 0, 0)) for n in range(MAX_ENTRIES)]
    )
    assert [m.text for m in full.memories] == [f"Fact {n}" for n in range(MAX_ENTRIES)]
    assert len(listed(memories)) == MAX_ENTRIES


def test_a_request_id_makes_the_batch_idempotent(memories: Stub, channel: grpc.Channel) -> None:
    entries = [
        entry("Allergic to cats", key="allergy"),
        entry("Has a dog"),
        entry("Allergic to dust", key="allergy"),
    ]
    first = batch(memories, entries, request_id="b-1")
    again = batch(memories, entries, request_id="b-1")
    assert again == first  # generated ids, archived, cursor: the first call's
    assert len(listed(memories, include_archived=True)) == 3
    changes = sync_pb2_grpc.SyncServiceStub(channel).ListChanges(sy.ListChangesRequest(parent=USER))
    assert len(changes.changes) == 3

    entries[1].memory.text = "Has two dogs"
    reused = _refused(memories, entries, request_id="b-1")
    assert (reused.code, reused.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "REQUEST_ID_REUSED",
    )
    # The same id on CreateMemory is another request too (ids are per RPC).
    other = rpc_failure(
        memories.CreateMemory,
        pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text="x"), request_id="b-1"),
    )
    assert other.reason == "REQUEST_ID_REUSED"
    # A refused batch records nothing: the id is free for the corrected batch.
    refused = _refused(memories, [entry("")], request_id="b-2")
    assert refused.reason == "INVALID_FIELD"
    assert len(batch(memories, [entry("fine")], request_id="b-2").memories) == 1


def test_a_retried_batch_with_vectors_answers_the_same_and_its_record_keeps_no_vector(
    memories: Stub, database_url: str
) -> None:
    entries = [entry(f"Fact {n}", embedding=vector(n, 1, 0, 0), key=f"k{n % 2}") for n in range(4)]
    first = batch(memories, entries, request_id="with-vectors")
    assert batch(memories, entries, request_id="with-vectors") == first
    with connected(database_url) as conn:
        (record,) = conn.execute(
            select(idempotency_records.c.result_json).where(
                idempotency_records.c.request_id == "with-vectors"
            )
        ).scalars()
    saved = json.loads(record)
    assert [s["memory"]["text"] for s in saved] == [f"Fact {n}" for n in range(4)]
    assert [s["memory"]["embedding"] for s in saved] == [None] * 4
    # The vectors are stored all the same: semantic recall finds the live entries.
    hits = recall(memories, "Fact", semantic=True, query_embedding=vector(3, 1, 0, 0))
    assert hits[0].memory.text == "Fact 3"


def test_concurrent_retries_of_one_batch_store_it_once(server: str) -> None:
    entries = [entry(f"Fact {n}", key=f"k{n % 7}") for n in range(200)]
    callers = 4
    barrier = threading.Barrier(callers)
    answers: list[pb.BatchCreateMemoriesResponse] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            with grpc.insecure_channel(server) as channel:
                barrier.wait(timeout=30)
                answers.append(batch(Stub(channel), entries, request_id="same"))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=call) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and len(answers) == callers
    assert all(answer == answers[0] for answer in answers)
    with grpc.insecure_channel(server) as channel:
        assert len(listed(Stub(channel), include_archived=True)) == 200


def test_the_change_feed_and_the_events_of_a_batch(
    memories: Stub, channel: grpc.Channel, governance: Governance
) -> None:
    stored = create(memories, "Lives in Lyon", key="home")
    sync = sync_pb2_grpc.SyncServiceStub(channel)
    before = sync.ListChanges(sy.ListChangesRequest(parent=USER)).changes[-1].cursor
    response = batch(
        memories,
        [
            entry("Lives in Paris", key="home"),
            entry("Has a cat"),
            entry("Lives in Oslo", key="home"),
        ],
    )
    paris, cat, oslo = response.memories
    changes = sync.ListChanges(sy.ListChangesRequest(parent=USER, after_cursor=before)).changes
    # One change per entry saved or archived: the stored entry archived, then
    # each entry as saved (Paris already archived by Oslo).
    assert [c.resource_name for c in changes] == [stored.name, paris.name, cat.name, oslo.name]
    assert [c.cursor for c in changes] == list(range(before + 1, before + 5))
    assert response.change_cursor == changes[-1].cursor
    assert changes[0].memory.HasField("archive_time") and changes[1].memory.HasField("archive_time")
    assert changes[3].memory == oslo and changes[2].memory == cat

    saved = all_events(governance, USER, types=[gv.EVENT_TYPE_MEMORY_SAVED])
    assert [e.attributes["memory"] for e in reversed(saved)] == [
        stored.name,
        paris.name,
        cat.name,
        oslo.name,
    ]


class CountingEmbedder:
    """A server embedder (``tests.api.test_batch_create:CountingEmbedder``)
    that records how many texts each ``embed`` call got."""

    calls: ClassVar[list[int]] = []
    model = "counting"
    dimensions = 3

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.calls.append(len(texts))
        return [(1.0, float(len(text)), 0.5) for text in texts]


def test_the_server_embeds_every_entry_without_a_vector_in_one_call(database_url: str) -> None:
    """In the background: the batch is stored before its vectors, then the
    embedder gets the texts without a client vector in one call."""
    CountingEmbedder.calls.clear()
    with (
        running_server(database_url, embedder=f"{__name__}:CountingEmbedder") as target,
        grpc.insecure_channel(target) as channel,
    ):
        stub = Stub(channel)
        response = batch(
            stub,
            [entry("one"), entry("two", embedding=vector(1, 2, 3, model="client")), entry("three")],
        )
        wait_until_embedded(database_url)
        assert CountingEmbedder.calls == [2]
        hits = recall(
            stub, "three", semantic=True, query_embedding=vector(1, 5, 0.5, model="counting")
        )
        assert [h.memory.name for h in hits][:1] == [response.memories[2].name]


def test_a_closed_gate_refuses_the_whole_batch_as_it_refuses_create_memory(
    memories: Stub, conversations: Any, governance: Governance
) -> None:
    """The gates themselves, RPC by RPC, are tests/api/test_gates.py's table."""
    conversations.CreateConversation(
        cv.CreateConversationRequest(
            parent=USER, conversation_id="t1", conversation=cv.Conversation(temporary=True)
        )
    )
    temporary = {"scope": pb.MEMORY_SCOPE_CONVERSATION, "conversation": f"{USER}/conversations/t1"}
    single = rpc_failure(
        memories.CreateMemory,
        pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text="Short answers", **temporary)),
    )
    batched = _refused(memories, [entry("Has a dog"), entry("Short answers", **temporary)])
    assert (batched.code, batched.reason, batched.metadata) == (
        single.code,
        single.reason,
        single.metadata,
    )
    assert single.reason == "TEMPORARY_CONVERSATION"

    set_consent(governance, USER, WITHDRAWN)
    single = rpc_failure(
        memories.CreateMemory, pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text="x"))
    )
    batched = _refused(memories, [entry("Has a dog"), entry("Has a cat")])
    assert (batched.code, batched.reason) == (single.code, "MEMORY_CONSENT_WITHDRAWN")
    set_consent(governance, USER, GRANTED)
    assert listed(memories, include_archived=True) == []
