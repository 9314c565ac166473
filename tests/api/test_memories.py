"""MemoryService entries through a real server: save, read, list, keyed
supersede and its audit trail, update, delete, ids, idempotency, limits."""

from __future__ import annotations

import threading

import grpc
from google.protobuf import field_mask_pb2

from mnemo.v1 import memories_pb2 as pb
from tests.api.memories import (
    C1,
    C2,
    USER,
    Stub,
    create,
    listed,
    recall,
    texts,
    vector,
    versions,
)
from tests.support.rpc_errors import rpc_failure


def _mask(*paths: str) -> field_mask_pb2.FieldMask:
    return field_mask_pb2.FieldMask(paths=paths)


def _update(stub: Stub, memory: pb.Memory, *paths: str) -> pb.Memory:
    updated: pb.Memory = stub.UpdateMemory(
        pb.UpdateMemoryRequest(memory=memory, update_mask=_mask(*paths))
    ).memory
    return updated


def test_save_get_and_list_with_filters_and_pages(memories: Stub) -> None:
    tea = create(memories, "Prefers green tea", metadata={"origin": "chat", "é": "ü"}, pinned=True)
    assert tea.name.startswith(f"{USER}/memories/") and len(tea.name.rsplit("/", 1)[1]) == 32
    assert (tea.scope, tea.source, tea.conversation) == (
        pb.MEMORY_SCOPE_IDENTITY,
        pb.MEMORY_SOURCE_TOOL_CALL,
        "",
    )
    assert dict(tea.metadata) == {"origin": "chat", "é": "ü"} and tea.pinned and tea.etag
    assert tea.create_time == tea.update_time and not tea.HasField("archive_time")
    assert not tea.HasField("embedding")  # input only
    order = create(
        memories,
        "Order RMA-1234 is late",
        scope=pb.MEMORY_SCOPE_CONVERSATION,
        conversation=C1,
        source=pb.MEMORY_SOURCE_USER,
        key="order",
    )
    other = create(
        memories, "Asked about invoices", scope=pb.MEMORY_SCOPE_CONVERSATION, conversation=C2
    )
    create(memories, "Someone else's fact", parent="users/u2")

    assert memories.GetMemory(pb.GetMemoryRequest(name=tea.name)).memory == tea
    assert (order.conversation, order.source) == (C1, pb.MEMORY_SOURCE_USER)
    assert listed(memories) == [other, order, tea]  # newest first
    assert listed(memories, scope=pb.MEMORY_SCOPE_IDENTITY) == [tea]
    assert listed(memories, scope=pb.MEMORY_SCOPE_CONVERSATION) == [other, order]
    assert listed(memories, conversation=C1) == [order]
    assert listed(memories, key="order") == [order]
    assert listed(memories, page_size=1) == [other, order, tea]

    first = memories.ListMemories(pb.ListMemoriesRequest(parent=USER, page_size=1))
    assert len(first.memories) == 1 and first.next_page_token
    foreign = rpc_failure(
        memories.ListMemories,
        pb.ListMemoriesRequest(
            parent=USER, page_size=1, page_token=first.next_page_token, include_archived=True
        ),
    )
    assert (foreign.code, foreign.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PAGE_TOKEN",
    )
    missing = rpc_failure(memories.GetMemory, pb.GetMemoryRequest(name=f"{USER}/memories/nope"))
    assert (missing.code, missing.metadata["name"]) == (
        grpc.StatusCode.NOT_FOUND,
        f"{USER}/memories/nope",
    )
    not_theirs = tea.name.replace("users/u1/", "users/u2/")
    assert rpc_failure(memories.GetMemory, pb.GetMemoryRequest(name=not_theirs)).code is (
        grpc.StatusCode.NOT_FOUND
    )


def test_a_keyed_save_supersedes_and_the_history_keeps_every_entry(memories: Stub) -> None:
    first = create(memories, "Lives in Lyon", key="home")
    scoped = create(
        memories, "Staying in Rome", key="home", scope=pb.MEMORY_SCOPE_CONVERSATION, conversation=C1
    )
    response = memories.CreateMemory(
        pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text="Lives in Paris", key="home"))
    )
    second = response.memory
    assert list(response.archived) == [first.name]  # not the conversation-scoped one
    third = memories.CreateMemory(
        pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text="Lives in Oslo", key="home"))
    )
    assert list(third.archived) == [second.name]

    assert listed(memories) == [third.memory, scoped]
    everything = listed(memories, include_archived=True)
    assert [m.text for m in everything] == [
        "Lives in Oslo",
        "Lives in Paris",
        "Staying in Rome",
        "Lives in Lyon",
    ]
    archived = memories.GetMemory(pb.GetMemoryRequest(name=first.name)).memory
    assert archived.HasField("archive_time") and archived.text == "Lives in Lyon"
    assert archived.etag != first.etag  # archiving changed it
    trail = versions(memories, third.memory.name)
    assert [m.text for m in trail] == ["Lives in Oslo", "Lives in Paris", "Lives in Lyon"]
    assert [m.HasField("archive_time") for m in trail] == [False, True, True]
    assert [m.text for m in versions(memories, first.name)] == [m.text for m in trail]
    assert texts(recall(memories, "lives")) == ["Lives in Oslo"]


def test_update_takes_an_etag_and_keeps_the_previous_text(memories: Stub) -> None:
    saved = create(memories, "Drinks coffee black", metadata={"a": "1"})
    saved.text = "Drinks coffee with oat milk"
    updated = _update(memories, saved)  # an empty mask means text
    assert (updated.text, dict(updated.metadata), updated.pinned) == (
        "Drinks coffee with oat milk",
        {"a": "1"},
        False,
    )
    assert updated.etag != saved.etag and updated.create_time == saved.create_time

    stale = pb.Memory(name=saved.name, text="lost update", etag=saved.etag)
    failure = rpc_failure(memories.UpdateMemory, pb.UpdateMemoryRequest(memory=stale))
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    assert failure.metadata["name"] == saved.name

    change = pb.Memory(
        name=saved.name, text="ignored", metadata={"b": "2"}, pinned=True, etag=updated.etag
    )
    flagged = _update(memories, change, "metadata", "pinned")
    assert (flagged.text, dict(flagged.metadata), flagged.pinned) == (
        "Drinks coffee with oat milk",
        {"b": "2"},
        True,
    )
    assert [(m.text, dict(m.metadata), m.pinned) for m in versions(memories, saved.name)] == [
        ("Drinks coffee with oat milk", {"b": "2"}, True),
        ("Drinks coffee with oat milk", {"a": "1"}, False),
        ("Drinks coffee black", {"a": "1"}, False),
    ]
    assert texts(recall(memories, "black")) == []
    assert texts(recall(memories, "oat")) == ["Drinks coffee with oat milk"]
    gone = rpc_failure(
        memories.UpdateMemory,
        pb.UpdateMemoryRequest(memory=pb.Memory(name=f"{USER}/memories/nope", text="x")),
    )
    assert gone.code is grpc.StatusCode.NOT_FOUND


def test_delete_leaves_a_tombstone_and_nothing_readable(memories: Stub) -> None:
    secret = create(memories, "Has a zorblaxqj condition", key="health")
    kept = create(memories, "Likes hiking")
    stale = rpc_failure(
        memories.DeleteMemory, pb.DeleteMemoryRequest(name=secret.name, etag="not-current")
    )
    assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")

    tombstone = memories.DeleteMemory(
        pb.DeleteMemoryRequest(name=secret.name, etag=secret.etag)
    ).tombstone
    assert (tombstone.name, tombstone.key) == (secret.name, "health")
    assert tombstone.HasField("delete_time")
    again = memories.DeleteMemory(pb.DeleteMemoryRequest(name=secret.name)).tombstone
    assert again == tombstone  # idempotent

    for call, request in (
        (memories.GetMemory, pb.GetMemoryRequest(name=secret.name)),
        (memories.ListMemoryVersions, pb.ListMemoryVersionsRequest(name=secret.name)),
    ):
        assert rpc_failure(call, request).code is grpc.StatusCode.NOT_FOUND
    assert listed(memories, include_archived=True) == [kept]
    assert recall(memories, "zorblaxqj condition") == []
    reused = rpc_failure(
        memories.CreateMemory,
        pb.CreateMemoryRequest(
            parent=USER, memory_id=secret.name.rsplit("/", 1)[1], memory=pb.Memory(text="x")
        ),
    )
    assert reused.code is grpc.StatusCode.ALREADY_EXISTS  # the tombstone keeps the id


def test_racing_keyed_saves_from_separate_channels_leave_one_live_entry(server: str) -> None:
    writers = 8
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def save(n: int) -> None:
        try:
            with grpc.insecure_channel(server) as channel:
                barrier.wait(timeout=30)
                create(Stub(channel), f"Favourite colour is shade {n}", key="colour")
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=save, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    with grpc.insecure_channel(server) as channel:
        stub = Stub(channel)
        live = listed(stub, key="colour")
        everything = listed(stub, key="colour", include_archived=True)
    assert len(live) == 1
    assert len(everything) == writers
    assert sum(not m.HasField("archive_time") for m in everything) == 1
    assert sorted(m.text for m in everything) == sorted(
        f"Favourite colour is shade {n}" for n in range(writers)
    )


def test_a_client_chosen_id_names_the_entry(memories: Stub) -> None:
    saved = create(memories, "Offline fact", memory_id="phone-0001")
    assert saved.name == f"{USER}/memories/phone-0001"
    taken = rpc_failure(
        memories.CreateMemory,
        pb.CreateMemoryRequest(parent=USER, memory_id="phone-0001", memory=pb.Memory(text="other")),
    )
    assert (taken.code, taken.metadata["name"]) == (grpc.StatusCode.ALREADY_EXISTS, saved.name)
    assert create(
        memories, "Same id, other user", parent="users/u2", memory_id="phone-0001"
    ).name == ("users/u2/memories/phone-0001")


def test_request_id_makes_a_save_idempotent(memories: Stub) -> None:
    request = pb.CreateMemoryRequest(
        parent=USER, memory=pb.Memory(text="Allergic to cats", key="allergy"), request_id="r-1"
    )
    first = memories.CreateMemory(request)
    assert memories.CreateMemory(request) == first
    assert listed(memories, include_archived=True) == [first.memory]
    request.memory.text = "Allergic to dogs"
    reused = rpc_failure(memories.CreateMemory, request)
    assert (reused.code, reused.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "REQUEST_ID_REUSED",
    )


def test_sizes_at_the_limits_pass_and_over_them_fail_with_every_violation(memories: Stub) -> None:
    at_limits = create(
        memories,
        "é" * 2048,  # 4096 bytes
        key="k" * 256,
        metadata={f"k{i:02}": "v" * 125 for i in range(32)},  # 32 entries, 4096 bytes
        embedding=vector(*([0.5] * 4096), model="big"),
    )
    assert len(at_limits.text.encode()) == 4096

    failure = rpc_failure(
        memories.CreateMemory,
        pb.CreateMemoryRequest(
            parent=USER,
            memory=pb.Memory(
                text="x" * 4097,
                key="k" * 257,
                metadata={"blob": "v" * 4096},
                embedding=vector(*([1.0] * 4097), model="big"),
            ),
        ),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_TOO_LARGE")
    assert failure.metadata["field"] == "memory.text" and failure.metadata["limit"] == "4096"
    assert failure.fields == (
        "memory.text",
        "memory.key",
        "memory.metadata",
        "memory.embedding.values",
    )
    mismatch = rpc_failure(
        memories.CreateMemory,
        pb.CreateMemoryRequest(
            parent=USER, memory=pb.Memory(text="short vector", embedding=vector(1.0, model="big"))
        ),
    )
    assert (mismatch.code, mismatch.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "EMBEDDING_DIMENSION_MISMATCH",
    )
    assert mismatch.metadata == {"expected": "4096", "got": "1"}
    assert listed(memories) == [at_limits]
