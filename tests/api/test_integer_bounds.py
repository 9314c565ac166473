"""Every numeric field of every request, at the edges of its type, on both
stores: never ``INTERNAL`` or ``UNKNOWN``, and SQLite and PostgreSQL answer
each call alike (a value one store cannot hold is refused at the edge, not by
the store: ``api.validation.MAX_POSITION``).

The fields come from the request descriptors (recursively), so a numeric field
added later fails ``test_every_numeric_request_field_has_a_case`` until it has
a valid base request here. Each call sends a valid base request with one
field set to one edge value; both servers get the same calls in the same
order, after the same seed (``test_fuzz.seed``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from mnemo.v1 import checkpoints_pb2 as cp
from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from mnemo.v1 import documents_pb2 as dc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1 import working_memory_pb2 as wm
from mnemo_server.api import pagination
from mnemo_server.api.validation import MAX_POSITION
from tests.api.history import message
from tests.api.test_fuzz import seed
from tests.support.databases import PostgresDatabases, SqliteDatabases
from tests.support.rpcs import Rpc, all_rpcs, call
from tests.support.server import running_server

pytestmark = pytest.mark.timeout(180)

_T = FieldDescriptor
EDGES: dict[int, tuple[float, ...]] = {
    _T.TYPE_INT32: (2**31 - 1, -1, -(2**31)),
    _T.TYPE_INT64: (2**31 - 1, 2**31, 2**63 - 1, -1, -(2**63)),
    _T.TYPE_DOUBLE: (1e308, -1e308, math.inf, math.nan),
    _T.TYPE_FLOAT: (3.4e38, math.inf, math.nan),
}
# Answered by the client library (a watch waits for changes), not by the server.
CLIENT_SIDE = {grpc.StatusCode.DEADLINE_EXCEEDED}
SERVER_BUGS = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
U1, C1 = "users/u1", "users/u1/conversations/c1"
VECTOR = mm.Embedding(model="edge-2d", values=[0.5, 0.25])
THREAD = f"{U1}/threads/t1"
PENDING_WRITE = cp.PendingWrite(task_id="task", channel="ch", type="bytes", value=b"v")

Requests = list[Message]
Base = Callable[[grpc.Channel, int], Requests]
"""A valid request (or a client stream of them) for the ``n``-th call."""


def _one(request: Message) -> Base:
    def fresh(channel: grpc.Channel, n: int) -> Requests:
        copy = type(request)()
        copy.CopyFrom(request)
        return [copy]

    return fresh


def _replace_prefix(channel: grpc.Channel, n: int) -> Requests:
    stub = conversations_pb2_grpc.ConversationServiceStub(channel)
    snapshot = stub.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1), timeout=10)
    return [
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1,
            revision=snapshot.revision,
            message_count=1,
            replacement=[message("summary")],
        )
    ]


def _import(channel: grpc.Channel, n: int) -> Requests:
    """u1's export, as records of a new user (one per call)."""
    records = call(channel, _rpc("ExportUserData"), gv.ExportUserDataRequest(parent=U1))
    target = f"users/imported{n}"
    requests = []
    for raw in records:
        record = gv.ExportUserDataResponse.FromString(raw).record
        text = text_format.MessageToString(record).replace(f'"{U1}', f'"{target}')
        requests.append(
            gv.ImportUserDataRequest(
                parent=target, record=text_format.Parse(text, gv.ExportRecord())
            )
        )
    return requests


_DOCUMENT_INDEX = dc.DocumentIndex(texts=[dc.IndexedText(text="tea", embedding=[0.5, 0.25])])

BASES: dict[str, Base] = {
    "CreateConversation": _one(cv.CreateConversationRequest(parent=U1)),
    "ListConversations": _one(cv.ListConversationsRequest(parent=U1)),
    "UpdateConversation": _one(cv.UpdateConversationRequest(conversation=cv.Conversation(name=C1))),
    "AppendMessages": _one(cv.AppendMessagesRequest(conversation=C1, messages=[message("x")])),
    "ListMessages": _one(cv.ListMessagesRequest(parent=C1)),
    "StreamMessages": _one(cv.StreamMessagesRequest(parent=C1)),
    "PopMessages": _one(cv.PopMessagesRequest(conversation=C1, count=1)),
    "RecordFailedRun": _one(
        cv.RecordFailedRunRequest(
            conversation=C1,
            run_id="edge",
            error=cv.RunError(message="boom"),
            messages=[message("x")],
        )
    ),
    "ListFailedRuns": _one(cv.ListFailedRunsRequest(parent=C1)),
    "ReplaceHistoryPrefix": _replace_prefix,
    "CreateMemory": _one(
        mm.CreateMemoryRequest(parent=U1, memory=mm.Memory(text="edge", embedding=VECTOR))
    ),
    "BatchCreateMemories": _one(
        mm.BatchCreateMemoriesRequest(
            parent=U1,
            requests=[mm.CreateMemoryRequest(memory=mm.Memory(text="edge", embedding=VECTOR))],
        )
    ),
    "ListMemories": _one(mm.ListMemoriesRequest(parent=U1)),
    "UpdateMemory": _one(
        mm.UpdateMemoryRequest(
            memory=mm.Memory(name=f"{U1}/memories/m1", embedding=VECTOR),
            update_mask={"paths": ["embedding"]},
        )
    ),
    "ListMemoryVersions": _one(mm.ListMemoryVersionsRequest(name=f"{U1}/memories/m1")),
    "RecallMemories": _one(
        mm.RecallMemoriesRequest(parent=U1, query="tea", query_embedding=VECTOR)
    ),
    "BuildContext": _one(mm.BuildContextRequest(parent=U1, query="tea", query_embedding=VECTOR)),
    "ExtractMemories": _one(
        mm.ExtractMemoriesRequest(
            parent=U1, messages=[message("My name is Ada")], require_approval=True
        )
    ),
    "ProposeMemoryCandidates": _one(
        mm.ProposeMemoryCandidatesRequest(
            parent=U1,
            candidates=[mm.MemoryCandidate(memory=mm.Memory(text="edge", embedding=VECTOR))],
        )
    ),
    "ListMemoryCandidates": _one(mm.ListMemoryCandidatesRequest(parent=U1)),
    "ImportUserData": _import,
    "ListEvents": _one(gv.ListEventsRequest(parent=U1)),
    "ListUserErasures": _one(gv.ListUserErasuresRequest(parent="tenants/-")),
    "ListChanges": _one(sy.ListChangesRequest(parent=U1)),
    "WatchChanges": _one(sy.WatchChangesRequest(parent=U1)),
    "PutDocument": _one(
        dc.PutDocumentRequest(
            parent=U1,
            document=dc.Document(
                namespace=["edge"], key="k", value_json="{}", index=_DOCUMENT_INDEX
            ),
            index=_DOCUMENT_INDEX,
        )
    ),
    "SearchDocuments": _one(
        dc.SearchDocumentsRequest(parent=U1, query="tea", query_embedding=[0.5, 0.25])
    ),
    "ListDocumentNamespaces": _one(dc.ListDocumentNamespacesRequest(parent=U1)),
    "PutCheckpoint": _one(
        cp.PutCheckpointRequest(
            checkpoint=cp.Checkpoint(
                thread_name=THREAD, checkpoint_id="c2", pending_writes=[PENDING_WRITE]
            )
        )
    ),
    "PutCheckpointWrites": _one(
        cp.PutCheckpointWritesRequest(parent=THREAD, checkpoint_id="c1", writes=[PENDING_WRITE])
    ),
    "ListCheckpoints": _one(cp.ListCheckpointsRequest(parent=THREAD)),
    "RememberExchange": _one(
        wm.RememberExchangeRequest(
            name=f"{U1}/memoryState", exchange=wm.Exchange(ask="q", answer="a")
        )
    ),
}


def _rpc(name: str) -> Rpc:
    (found,) = [rpc for rpc in all_rpcs() if rpc.name == name]
    return found


def numeric_fields(descriptor: Descriptor, prefix: str = "") -> Iterator[tuple[str, int]]:
    """``(path, type)`` of every numeric field reachable in ``descriptor``'s
    ``mnemo.v1`` messages (each message type once per path)."""
    for field in descriptor.fields:
        path = f"{prefix}{field.name}"
        if field.type in EDGES:
            yield path, field.type
        elif field.type == _T.TYPE_MESSAGE and field.message_type.full_name.startswith("mnemo."):
            if field.message_type is not descriptor:
                yield from numeric_fields(field.message_type, f"{path}.")


CASES = [
    (rpc, path, value)
    for rpc in all_rpcs()
    for path, kind in numeric_fields(rpc.method.input_type)
    for value in EDGES[kind]
]


def _set(requests: Requests, path: str, value: float) -> bool:
    """Set ``path`` to ``value`` in the first request that has every step
    of it (a repeated message: its first element; repeated numbers: the
    first); whether one had it."""
    for request in requests:
        target: Message = request
        *steps, last = path.split(".")
        for step in steps:
            field = target.DESCRIPTOR.fields_by_name[step]
            if field.is_repeated:
                items = getattr(target, step)
                if not items:
                    break
                target = items[0]
            elif field.containing_oneof is not None and not target.HasField(step):
                break
            else:
                target = getattr(target, step)
        else:
            field = target.DESCRIPTOR.fields_by_name[last]
            if field.is_repeated:
                values = getattr(target, last)
                if values:
                    values[0] = value
                else:
                    values.append(value)
            else:
                setattr(target, last, value)
            return True
    return False


def _outcome(channel: grpc.Channel, rpc: Rpc, requests: Requests) -> str:
    timeout = 0.5 if rpc.name == "WatchChanges" else 10.0
    try:
        call(channel, rpc, requests, timeout=timeout)
    except grpc.RpcError as error:
        code = error.code()
        assert code not in SERVER_BUGS, (rpc.name, error.details())
        return "DEADLINE" if code in CLIENT_SIDE else code.name
    return "OK"


def _seed(channel: grpc.Channel) -> None:
    """``test_fuzz.seed``, plus what u1's export needs to hold every kind of
    record: a candidate with a vector, an earlier version, a checkpoint, a
    document with an embedding; and a
    graph checkpoint with a pending write."""
    seed(channel)
    for rpc, request in (
        (
            "ProposeMemoryCandidates",
            mm.ProposeMemoryCandidatesRequest(
                parent=U1,
                candidates=[mm.MemoryCandidate(memory=mm.Memory(text="seed", embedding=VECTOR))],
            ),
        ),
        (
            "UpdateMemory",
            mm.UpdateMemoryRequest(memory=mm.Memory(name=f"{U1}/memories/m1", text="likes coffee")),
        ),
        (
            "PutDocument",
            dc.PutDocumentRequest(
                parent=U1,
                document=dc.Document(namespace=["seed"], key="k", value_json="{}"),
                index=_DOCUMENT_INDEX,
            ),
        ),
    ):
        call(channel, _rpc(rpc), request)
    call(channel, _rpc("ReplaceHistoryPrefix"), _replace_prefix(channel, 0))
    checkpoint = cp.Checkpoint(thread_name=THREAD, checkpoint_id="c1", type="bytes")
    call(channel, _rpc("PutCheckpoint"), cp.PutCheckpointRequest(checkpoint=checkpoint))
    writes = cp.PutCheckpointWritesRequest(
        parent=THREAD, checkpoint_id="c1", writes=[PENDING_WRITE]
    )
    call(channel, _rpc("PutCheckpointWrites"), writes)


def _outcomes(channel: grpc.Channel) -> dict[str, str]:
    _seed(channel)
    found = {}
    for n, (rpc, path, value) in enumerate(CASES):
        requests = BASES[rpc.name](channel, n)
        assert _set(requests, path, value), f"the base request of {rpc.name} lacks {path}"
        found[f"{rpc.name} {path}={value}"] = _outcome(channel, rpc, requests)
    return found


def test_every_numeric_request_field_has_a_case() -> None:
    assert {rpc.name for rpc, _, _ in CASES} == set(BASES)


def test_every_numeric_field_at_its_edges_on_both_stores(
    sqlite_databases: SqliteDatabases, postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    outcomes = {}
    pg_url = postgres_databases.fresh()
    try:
        for label, url in (("sqlite", sqlite_databases.fresh(tmp_path)), ("postgres", pg_url)):
            with running_server(url) as target, grpc.insecure_channel(target) as channel:
                outcomes[label] = _outcomes(channel)
    finally:
        postgres_databases.drop(pg_url)
    differ = {
        case: (outcomes["sqlite"][case], outcomes["postgres"][case])
        for case in outcomes["sqlite"]
        if outcomes["sqlite"][case] != outcomes["postgres"][case]
    }
    assert differ == {}, "\n".join(f"{case}: {pair}" for case, pair in sorted(differ.items()))
    # The edge refuses what PostgreSQL's 32-bit position columns cannot hold.
    assert outcomes["sqlite"][f"ListMessages start_position={MAX_POSITION + 1}"] == (
        "INVALID_ARGUMENT"
    )
    assert outcomes["sqlite"][f"ListMessages start_position={MAX_POSITION}"] == "OK"


def test_a_forged_page_token_with_a_position_past_the_edge_is_refused(
    sqlite_databases: SqliteDatabases, postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    pg_url = postgres_databases.fresh()
    try:
        for url in (sqlite_databases.fresh(tmp_path), pg_url):
            with running_server(url) as target, grpc.insecure_channel(target) as channel:
                _seed(channel)
                for keyset, expected in (
                    ((MAX_POSITION - 1,), "OK"),
                    ((2**40,), "INVALID_ARGUMENT"),
                ):
                    token = pagination.encode_page_token("ListMessages", (C1,), keyset)
                    request = cv.ListMessagesRequest(parent=C1, page_token=token)
                    assert _outcome(channel, _rpc("ListMessages"), [request]) == expected
    finally:
        postgres_databases.drop(pg_url)
