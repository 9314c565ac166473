"""Analytics events through a real server: what each memory operation
records, ListEvents (users, tenants, paging, filters, permissions) and
WatchEvents (live, filtered, and ended by a server shutdown)."""

from __future__ import annotations

import threading
from typing import Any, cast

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import (
    conversations_pb2_grpc,
    governance_pb2_grpc,
    memories_pb2_grpc,
    working_memory_pb2_grpc,
)
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.governance import (
    WAIT_S,
    WITHDRAWN,
    Governance,
    all_events,
    eventually,
    set_consent,
)
from tests.api.history import message
from tests.api.memories import USER, Stub, chat, create
from tests.support.rpc_errors import rpc_failure
from tests.support.server import ServerThread, server_settings
from tests.support.tokens import SigningKeys, bearer

FACT = chat(("user", "My name is Ada and I'm allergic to peanuts"))
SAVED, DELETED, CLEARED, RECALLED = (
    gv.EVENT_TYPE_MEMORY_SAVED,
    gv.EVENT_TYPE_MEMORY_DELETED,
    gv.EVENT_TYPE_MEMORY_CLEARED,
    gv.EVENT_TYPE_MEMORY_RECALLED,
)
PROPOSED, RESOLVED, CONSENT = (
    gv.EVENT_TYPE_MEMORY_EXTRACTION_PROPOSED,
    gv.EVENT_TYPE_MEMORY_EXTRACTION_RESOLVED,
    gv.EVENT_TYPE_MEMORY_CONSENT_CHANGED,
)

Seen = tuple[gv.EventType, dict[str, str]]


def _seen(events: list[gv.Event]) -> list[Seen]:
    """Oldest first: (type, attributes)."""
    return [(e.type, dict(e.attributes)) for e in reversed(events)]


def _saved(memory: pb.Memory, **extra: str) -> Seen:
    source = pb.MemorySource.Name(memory.source).removeprefix("MEMORY_SOURCE_").lower()
    return SAVED, {"memory": memory.name, "key": memory.key, "source": source, **extra}


def test_each_memory_operation_records_its_event(
    memories: Stub,
    conversations: conversations_pb2_grpc.ConversationServiceStub,
    working_memory: working_memory_pb2_grpc.WorkingMemoryServiceStub,
    governance: Governance,
) -> None:
    expected: list[Seen] = []
    oslo = create(memories, "Lives in Oslo", key="home", request_id="r1")
    create(memories, "Lives in Oslo", key="home", request_id="r1")  # a retry: no new event
    expected.append(_saved(oslo))
    bergen = memories.UpdateMemory(
        pb.UpdateMemoryRequest(memory=pb.Memory(name=oslo.name, text="Lives in Bergen"))
    ).memory
    expected.append(_saved(bergen, updated="true"))
    assert (
        len(list(memories.RecallMemories(pb.RecallMemoriesRequest(parent=USER, query="Bergen"))))
        == 1
    )
    expected.append((RECALLED, {"count": "1", "mode": "recall", "semantic": "false"}))
    memories.BuildContext(pb.BuildContextRequest(parent=USER, query="Bergen Paris"))
    expected.append((RECALLED, {"count": "1", "mode": "inject", "semantic": "false"}))
    memories.DeleteMemory(pb.DeleteMemoryRequest(name=oslo.name))
    memories.DeleteMemory(pb.DeleteMemoryRequest(name=oslo.name))  # again: nothing new
    expected.append((DELETED, {"memory": oslo.name, "key": "home"}))

    first, second = memories.ProposeMemoryCandidates(
        pb.ProposeMemoryCandidatesRequest(
            parent=USER,
            candidates=[pb.MemoryCandidate(memory=pb.Memory(text=t)) for t in ("Tea", "Bikes")],
        )
    ).candidates
    expected.append((PROPOSED, {"count": "2"}))
    approved = memories.ApproveMemoryCandidate(
        pb.ApproveMemoryCandidateRequest(name=first.name)
    ).memory
    expected.append(_saved(approved))
    expected.append(
        (RESOLVED, {"resolution": "approved", "candidate": first.name, "memory": approved.name})
    )
    memories.RejectMemoryCandidate(pb.RejectMemoryCandidateRequest(name=second.name))
    expected.append((RESOLVED, {"resolution": "rejected", "candidate": second.name}))

    extracted = memories.ExtractMemories(pb.ExtractMemoriesRequest(parent=USER, messages=FACT))
    assert extracted.memories
    expected.extend(_saved(m) for m in extracted.memories)
    pending = memories.ExtractMemories(
        pb.ExtractMemoriesRequest(parent=USER, messages=FACT, require_approval=True)
    ).candidates
    expected.append((PROPOSED, {"count": str(len(pending))}))

    state = f"{USER}/memoryState"
    working_memory.RememberExchange(
        wm.RememberExchangeRequest(name=state, exchange=wm.Exchange(ask="Hi?", answer="Hello"))
    )
    working_memory.ClearMemoryState(wm.ClearMemoryStateRequest(name=state))
    expected.append((CLEARED, {"cleared": "working_memory", "name": state}))
    conversation = f"{USER}/conversations/c1"
    conversations.AppendMessages(
        cv.AppendMessagesRequest(conversation=conversation, messages=[message("hello")])
    )
    conversations.ClearMessages(cv.ClearMessagesRequest(conversation=conversation))
    expected.append((CLEARED, {"cleared": "history", "name": conversation}))

    set_consent(governance, USER, WITHDRAWN, "policy-7")
    expected.append(
        (
            CONSENT,
            {
                "state": "withdrawn",
                "policy_version": "policy-7",
                "cancelled_candidates": str(len(pending)),
            },
        )
    )
    # Under a closed gate, recall returns nothing and records nothing.
    list(memories.RecallMemories(pb.RecallMemoriesRequest(parent=USER, query="Bergen")))

    events = all_events(governance, USER)
    assert _seen(events) == expected
    assert all(e.name.startswith(f"{USER}/events/") and e.tenant == "" for e in events)
    assert len({e.name for e in events}) == len(events)
    times = [e.create_time.ToDatetime() for e in events]
    assert times == sorted(times, reverse=True)


def test_list_events_pages_filters_and_tokens(memories: Stub, governance: Governance) -> None:
    for n in range(5):
        memory = create(memories, f"fact {n}")
        memories.DeleteMemory(pb.DeleteMemoryRequest(name=memory.name))
    create(memories, "fact", parent="users/u2")
    everything = all_events(governance, USER)
    assert len(everything) == 10
    assert all_events(governance, USER, page_size=3) == everything
    deletions = all_events(governance, USER, types=[DELETED], page_size=2)
    assert deletions == [e for e in everything if e.type == DELETED]
    assert len(all_events(governance, USER, types=[DELETED, SAVED])) == 10

    page = governance.ListEvents(gv.ListEventsRequest(parent=USER, page_size=2, types=[DELETED]))
    for request in (
        gv.ListEventsRequest(parent=USER, page_token=page.next_page_token),
        gv.ListEventsRequest(parent="users/u2", page_token=page.next_page_token, types=[DELETED]),
        gv.ListEventsRequest(parent=USER, page_token="garbage"),
    ):
        failure = rpc_failure(governance.ListEvents, request)
        assert failure.reason == "INVALID_PAGE_TOKEN", request
    # The same filter in another order is the same filter.
    both = governance.ListEvents(
        gv.ListEventsRequest(parent=USER, page_size=2, types=[SAVED, DELETED])
    )
    follow = gv.ListEventsRequest(
        parent=USER, page_token=both.next_page_token, types=[DELETED, SAVED]
    )
    assert governance.ListEvents(follow).events

    for request, field in (
        (gv.ListEventsRequest(parent=USER, types=[gv.EVENT_TYPE_UNSPECIFIED]), "types[0]"),
        (gv.ListEventsRequest(parent=USER, types=[SAVED, cast(gv.EventType, 99)]), "types[1]"),
        (gv.ListEventsRequest(parent=USER, page_size=-1), "page_size"),
    ):
        failure = rpc_failure(governance.ListEvents, request)
        assert (failure.code, failure.fields) == (grpc.StatusCode.INVALID_ARGUMENT, (field,))
    for parent in ("", "users/u1/events", "groups/g1", "tenants/", "tenants/-x"):
        failure = rpc_failure(governance.ListEvents, gv.ListEventsRequest(parent=parent))
        assert failure.reason == "INVALID_NAME", parent

    # Without authentication, on loopback: "tenants/-" lists every user without a tenant.
    tenant = all_events(governance, "tenants/-")
    assert {e.name.split("/")[1] for e in tenant} == {"u1", "u2"}
    assert all_events(governance, "tenants/t1") == []


def test_tenant_events_need_an_admin_of_that_tenant(
    jwt_target: tuple[str, SigningKeys],
) -> None:
    target, keys = jwt_target
    alice = bearer(keys.token("alice", tenant="t1"))
    admin = bearer(keys.token("ops", tenant="t1", admin=True))
    other_admin = bearer(keys.token("ops2", tenant="t2", admin=True))
    with grpc.insecure_channel(target) as channel:
        memories = memories_pb2_grpc.MemoryServiceStub(channel)
        governance = gv_stub(channel)
        memories.CreateMemory(
            pb.CreateMemoryRequest(parent="users/alice", memory=pb.Memory(text="Tea")),
            metadata=alice,
        )
        memories.CreateMemory(
            pb.CreateMemoryRequest(parent="users/bob", memory=pb.Memory(text="Coffee")),
            metadata=bearer(keys.token("bob", tenant="t2")),
        )
        (event,) = all_events(governance, "tenants/t1", metadata=admin)
        assert (event.name.split("/")[1], event.tenant) == ("alice", "t1")
        assert all_events(governance, "users/alice", metadata=alice) == [event]
        for who, parent in (
            (alice, "tenants/t1"),
            (other_admin, "tenants/t1"),
            (admin, "tenants/t2"),
        ):
            for call in (governance.ListEvents, _first_watched(governance)):
                failure = rpc_failure(call, gv.ListEventsRequest(parent=parent), metadata=who)
                assert (failure.code, failure.reason) == (
                    grpc.StatusCode.PERMISSION_DENIED,
                    "PERMISSION_DENIED",
                ), parent
        failure = rpc_failure(
            governance.ListEvents, gv.ListEventsRequest(parent="users/bob"), metadata=alice
        )
        assert failure.code is grpc.StatusCode.NOT_FOUND


def test_events_of_a_principal_acting_for_a_user_name_it_as_actor(
    jwt_target: tuple[str, SigningKeys],
) -> None:
    """Writes and recalls by an admin credential for alice carry ``actor``
    (its ``sub``); alice's own calls, and the admin's for itself, do not."""
    target, keys = jwt_target
    alice = bearer(keys.token("alice", tenant="t1"))
    service = bearer(keys.token("svc-ingest", tenant="t1", admin=True))
    with grpc.insecure_channel(target) as channel:
        memories: Stub = memories_pb2_grpc.MemoryServiceStub(channel)
        governance = gv_stub(channel)
        working_memory = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
        own = memories.CreateMemory(
            pb.CreateMemoryRequest(parent="users/alice", memory=pb.Memory(text="Tea")),
            metadata=alice,
        ).memory
        list(
            memories.RecallMemories(
                pb.RecallMemoriesRequest(parent="users/alice", query="Tea"), metadata=alice
            )
        )
        for_her = memories.CreateMemory(
            pb.CreateMemoryRequest(parent="users/alice", memory=pb.Memory(text="Bikes")),
            metadata=service,
        ).memory
        memories.UpdateMemory(
            pb.UpdateMemoryRequest(memory=pb.Memory(name=for_her.name, text="Fast bikes")),
            metadata=service,
        )
        list(
            memories.RecallMemories(
                pb.RecallMemoriesRequest(parent="users/alice", query="Tea"), metadata=service
            )
        )
        memories.DeleteMemory(pb.DeleteMemoryRequest(name=own.name), metadata=service)
        state = "users/alice/memoryState"
        working_memory.RememberExchange(
            wm.RememberExchangeRequest(name=state, exchange=wm.Exchange(ask="Hi?")),
            metadata=alice,
        )
        working_memory.ClearMemoryState(wm.ClearMemoryStateRequest(name=state), metadata=service)
        consent = gv.Consent(name="users/alice/consent", state=WITHDRAWN, policy_version="p2")
        governance.SetConsent(gv.SetConsentRequest(consent=consent), metadata=service)
        memories.CreateMemory(
            pb.CreateMemoryRequest(parent="users/svc-ingest", memory=pb.Memory(text="Mine")),
            metadata=service,
        )

        events = all_events(governance, "users/alice", metadata=alice)
        (of_itself,) = all_events(governance, "users/svc-ingest", metadata=service)
    # Sorted: a recall's event rides the next batch of writes, so its place may vary.
    assert sorted((e.type, e.attributes.get("actor", "")) for e in events) == sorted(
        [
            (SAVED, ""),
            (RECALLED, ""),
            (SAVED, "svc-ingest"),
            (SAVED, "svc-ingest"),
            (RECALLED, "svc-ingest"),
            (DELETED, "svc-ingest"),
            (CLEARED, "svc-ingest"),
            (CONSENT, "svc-ingest"),
        ]
    )
    assert "actor" not in of_itself.attributes


def gv_stub(channel: grpc.Channel) -> Governance:
    return governance_pb2_grpc.GovernanceServiceStub(channel)


def _first_watched(governance: Governance) -> Any:
    """``WatchEvents`` as a unary call of a ``ListEventsRequest``: the first event."""

    def watch(request: gv.ListEventsRequest, **kw: Any) -> gv.WatchEventsResponse:
        stream = governance.WatchEvents(
            gv.WatchEventsRequest(parent=request.parent, types=request.types), timeout=WAIT_S, **kw
        )
        first: gv.WatchEventsResponse = next(iter(stream))
        return first

    return watch


# ------------------------------------------------------------------ watching


class Watcher:
    """Collects the events of one WatchEvents stream in a thread."""

    def __init__(
        self, governance: Governance, parent: str, types: list[gv.EventType] | None = None
    ) -> None:
        self.events: list[gv.Event] = []
        self.error: grpc.RpcError | None = None
        self.ended = threading.Event()
        self._stream = governance.WatchEvents(
            gv.WatchEventsRequest(parent=parent, types=types or []), timeout=3 * WAIT_S
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for response in self._stream:
                self.events.append(response.event)
        except grpc.RpcError as error:
            self.error = error
        finally:
            self.ended.set()

    def memories(self) -> list[str]:
        return [e.attributes["memory"] for e in self.events if "memory" in e.attributes]

    def cancel(self) -> None:
        self._stream.cancel()
        self._thread.join(WAIT_S)


def _until_live(memories: Stub, watcher: Watcher) -> None:
    """Save probes until the watcher has seen one (it only sees what happens
    after it started)."""

    def probe() -> bool | None:
        create(memories, "probe")
        return True if watcher.events else None

    eventually(probe, "the watch to be live")


def test_watch_events_streams_new_events_of_the_user(
    memories: Stub, governance: Governance
) -> None:
    create(memories, "before the watch")
    everything = Watcher(governance, USER)
    deletions = Watcher(governance, USER, types=[DELETED])
    try:
        _until_live(memories, everything)
        saved = [create(memories, f"fact {n}") for n in range(3)]
        create(memories, "someone else", parent="users/u2")
        for memory in saved:
            memories.DeleteMemory(pb.DeleteMemoryRequest(name=memory.name))
        names = [m.name for m in saved]
        eventually(
            lambda: True if everything.memories()[-6:] == names + names else None,
            "the saves and deletions",
        )
        eventually(lambda: True if deletions.memories() == names else None, "the deletions")
        assert "before the watch" not in [e.attributes.get("memory") for e in everything.events]
        assert {e.type for e in deletions.events} == {DELETED}
        assert all(e.name.startswith(f"{USER}/") for e in everything.events)
    finally:
        everything.cancel()
        deletions.cancel()


def test_a_server_shutdown_ends_watch_streams_cleanly(database_url: str) -> None:
    thread = ServerThread(server_settings(database_url))
    target = thread.start()
    try:
        with grpc.insecure_channel(target) as channel:
            memories = memories_pb2_grpc.MemoryServiceStub(channel)
            watcher = Watcher(gv_stub(channel), USER)
            _until_live(memories, watcher)
            thread.stop(grace=WAIT_S)
            assert watcher.ended.wait(WAIT_S), "the watch outlived the server"
            assert watcher.error is None
    finally:
        thread.stop()
