"""CheckpointService through a real server, on both backends: puts and
writes round-trip their bytes, get and list answer as LangGraph's savers do,
thread deletion, copy, prune and delete-for-runs, the change feed, and the
errors with their reasons and field violations."""

from __future__ import annotations

import json

import grpc
import pytest

from mnemo.v1 import checkpoints_pb2 as cp
from mnemo.v1 import checkpoints_pb2_grpc, sync_pb2_grpc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import sync_pb2 as sy
from tests.api.user_data import export, load
from tests.support.rpc_errors import rpc_failure

Stub = checkpoints_pb2_grpc.CheckpointServiceStub
THREAD = "users/u1/threads/t1"


@pytest.fixture
def checkpoints(channel: grpc.Channel) -> Stub:
    return checkpoints_pb2_grpc.CheckpointServiceStub(channel)


def _put(
    stub: Stub,
    checkpoint_id: str,
    *,
    thread: str = THREAD,
    ns: str = "",
    parent: str = "",
    metadata: dict[str, object] | None = None,
) -> cp.PutCheckpointResponse:
    response: cp.PutCheckpointResponse = stub.PutCheckpoint(
        cp.PutCheckpointRequest(
            checkpoint=cp.Checkpoint(
                thread_name=thread,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                parent_checkpoint_id=parent,
                type="msgpack",
                checkpoint=b"\x00\xffstate " + checkpoint_id.encode(),
                metadata_json=json.dumps(metadata or {"source": "loop", "step": 0}),
            )
        )
    )
    return response


def _write(stub: Stub, checkpoint_id: str, task: str, *writes: tuple[int, str, bytes]) -> int:
    response = stub.PutCheckpointWrites(
        cp.PutCheckpointWritesRequest(
            parent=THREAD,
            checkpoint_id=checkpoint_id,
            writes=[
                cp.PendingWrite(task_id=task, idx=idx, channel=ch, type="msgpack", value=value)
                for idx, ch, value in writes
            ],
        )
    )
    count: int = response.written_count
    return count


def _ids(stub: Stub, **kwargs: object) -> list[str]:
    response = stub.ListCheckpoints(cp.ListCheckpointsRequest(parent=THREAD, **kwargs))  # type: ignore[arg-type]
    return [c.checkpoint_id for c in response.checkpoints]


def test_a_checkpoint_and_its_writes_round_trip_byte_for_byte(checkpoints: Stub) -> None:
    _put(checkpoints, "01", metadata={"source": "input", "step": -1})
    put = _put(checkpoints, "02", parent="01", metadata={"source": "loop", "step": 0})
    assert put.change_cursor > 0 and put.checkpoint.checkpoint == b""
    assert _write(checkpoints, "02", "task-b", (0, "messages", b"\x01\x02"), (1, "x", b"")) == 2
    assert _write(checkpoints, "02", "task-a", (0, "y", b"\x03")) == 1
    got = checkpoints.GetCheckpoint(cp.GetCheckpointRequest(parent=THREAD)).checkpoint
    assert (got.checkpoint_id, got.parent_checkpoint_id, got.type) == ("02", "01", "msgpack")
    assert got.checkpoint == b"\x00\xffstate 02"
    assert json.loads(got.metadata_json) == {"source": "loop", "step": 0}
    assert [(w.task_id, w.idx, w.channel, w.value) for w in got.pending_writes] == [
        ("task-a", 0, "y", b"\x03"),
        ("task-b", 0, "messages", b"\x01\x02"),
        ("task-b", 1, "x", b""),
    ]
    first = checkpoints.GetCheckpoint(cp.GetCheckpointRequest(parent=THREAD, checkpoint_id="01"))
    assert first.checkpoint.checkpoint == b"\x00\xffstate 01"
    assert list(first.checkpoint.pending_writes) == []


def test_regular_writes_are_kept_and_special_ones_replaced(checkpoints: Stub) -> None:
    _put(checkpoints, "01")
    assert _write(checkpoints, "01", "t", (0, "ch", b"first")) == 1
    assert _write(checkpoints, "01", "t", (0, "ch", b"second")) == 0
    assert _write(checkpoints, "01", "t", (-3, "__interrupt__", b"ask")) == 1
    assert _write(checkpoints, "01", "t", (-3, "__interrupt__", b"ask again")) == 1
    got = checkpoints.GetCheckpoint(cp.GetCheckpointRequest(parent=THREAD)).checkpoint
    assert sorted((w.idx, w.value) for w in got.pending_writes) == [
        (-3, b"ask again"),
        (0, b"first"),
    ]
    # One key twice in a call (two errors both map to idx -1): special writes,
    # the last wins; regular ones, the first (LangGraph's savers' executemany).
    assert _write(checkpoints, "01", "u", (-1, "__error__", b"e1"), (-1, "__error__", b"e2")) == 1
    assert _write(checkpoints, "01", "u", (0, "ch", b"r1"), (0, "ch", b"r2")) == 1
    got = checkpoints.GetCheckpoint(cp.GetCheckpointRequest(parent=THREAD)).checkpoint
    assert [(w.idx, w.value) for w in got.pending_writes if w.task_id == "u"] == [
        (-1, b"e2"),
        (0, b"r1"),
    ]


def test_list_is_newest_first_with_namespace_filter_before_and_limit(checkpoints: Stub) -> None:
    for n, source in enumerate(["input", "loop", "input", "loop"]):
        _put(checkpoints, f"0{n}", metadata={"source": source, "step": n, "run_id": "r"})
    _put(checkpoints, "09", ns="child:1")
    assert _ids(checkpoints, checkpoint_ns="") == ["03", "02", "01", "00"]
    assert _ids(checkpoints) == ["09", "03", "02", "01", "00"]
    assert _ids(checkpoints, checkpoint_ns="child:1") == ["09"]
    assert _ids(checkpoints, metadata_filter={"source": '"input"'}) == ["02", "00"]
    assert _ids(checkpoints, metadata_filter={"source": '"loop"', "step": "3"}) == ["03"]
    assert _ids(checkpoints, metadata_filter={"step": "true"}) == []
    assert _ids(checkpoints, checkpoint_ns="", before_checkpoint_id="02") == ["01", "00"]
    page = checkpoints.ListCheckpoints(
        cp.ListCheckpointsRequest(parent=THREAD, checkpoint_ns="", page_size=2)
    )
    assert [c.checkpoint_id for c in page.checkpoints] == ["03", "02"]
    assert page.next_before_checkpoint_id == "02"


def test_a_missing_checkpoint_is_not_found(checkpoints: Stub) -> None:
    failure = rpc_failure(checkpoints.GetCheckpoint, cp.GetCheckpointRequest(parent=THREAD))
    assert (failure.code, failure.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_FOUND")
    _put(checkpoints, "01")
    failure = rpc_failure(
        checkpoints.GetCheckpoint, cp.GetCheckpointRequest(parent=THREAD, checkpoint_id="02")
    )
    assert failure.metadata == {"name": f"{THREAD}/checkpoints/02"}


def test_delete_copy_prune_and_delete_for_runs(checkpoints: Stub) -> None:
    for n in range(3):
        _put(checkpoints, f"0{n}", metadata={"run_id": f"run{n % 2}"})
    _put(checkpoints, "05", ns="child:1", metadata={"run_id": "run1"})
    _write(checkpoints, "02", "t", (0, "ch", b"v"))
    copied = checkpoints.CopyThread(
        cp.CopyThreadRequest(name=THREAD, target_name="users/u1/threads/t2")
    )
    assert copied.copied_count == 4
    t2 = checkpoints.GetCheckpoint(cp.GetCheckpointRequest(parent="users/u1/threads/t2"))
    assert (
        t2.checkpoint.checkpoint == b"\x00\xffstate 02" and len(t2.checkpoint.pending_writes) == 1
    )
    pruned = checkpoints.PruneThreads(
        cp.PruneThreadsRequest(
            parent="users/u1", thread_ids=["t1"], strategy=cp.PRUNE_STRATEGY_KEEP_LATEST
        )
    )
    assert pruned.deleted_count == 2
    assert _ids(checkpoints) == ["05", "02"]
    runs = checkpoints.DeleteCheckpointsForRuns(
        cp.DeleteCheckpointsForRunsRequest(parent="users/u1", run_ids=["run1"])
    )
    assert runs.deleted_count == 3  # t1's 05, t2's 01 and 05
    deleted = checkpoints.DeleteThread(cp.DeleteThreadRequest(name="users/u1/threads/t2"))
    assert deleted.deleted_count == 2
    again = checkpoints.DeleteThread(cp.DeleteThreadRequest(name="users/u1/threads/t2"))
    assert (again.deleted_count, again.change_cursor) == (0, 0)
    assert _ids(checkpoints) == ["02"]


def test_the_change_feed_names_each_checkpoint_without_its_bytes(
    checkpoints: Stub, channel: grpc.Channel
) -> None:
    _put(checkpoints, "01", ns="child:1")
    _write(checkpoints, "01", "t", (0, "ch", b"secret value"))
    checkpoints.DeleteThread(cp.DeleteThreadRequest(name=THREAD))
    feed = sync_pb2_grpc.SyncServiceStub(channel)
    changes = feed.ListChanges(sy.ListChangesRequest(parent="users/u1")).changes
    assert [(c.operation, c.resource_name) for c in changes] == [
        (sy.CHANGE_OPERATION_UPSERT, f"{THREAD}/checkpoints/01"),
        (sy.CHANGE_OPERATION_UPSERT, f"{THREAD}/checkpoints/01"),
        (sy.CHANGE_OPERATION_DELETE, THREAD),
    ]
    # The thread's deletion stripped the states of its earlier changes.
    assert [c.WhichOneof("state") for c in changes] == [None, None, None]


def test_the_change_feed_carries_the_checkpoint_ref(
    checkpoints: Stub, channel: grpc.Channel
) -> None:
    _put(checkpoints, "01", ns="child:1", metadata={"step": 4})
    _write(checkpoints, "01", "t", (0, "ch", b"secret value"))
    feed = sync_pb2_grpc.SyncServiceStub(channel)
    put, writes = feed.ListChanges(sy.ListChangesRequest(parent="users/u1")).changes
    assert put.checkpoint.thread_name == THREAD and put.checkpoint.checkpoint_ns == "child:1"
    assert put.checkpoint.checkpoint == b"" and json.loads(put.checkpoint.metadata_json) == {
        "step": 4
    }
    assert [(w.task_id, w.channel, w.value) for w in writes.checkpoint.pending_writes] == [
        ("t", "ch", b"")
    ]


def test_bad_requests_name_their_fields(checkpoints: Stub) -> None:
    failure = rpc_failure(
        checkpoints.PutCheckpoint,
        cp.PutCheckpointRequest(
            checkpoint=cp.Checkpoint(thread_name="users/u1/threads/", metadata_json="[1]")
        ),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")
    assert set(failure.fields) == {
        "checkpoint.thread_name",
        "checkpoint.checkpoint_id",
        "checkpoint.metadata_json",
    }
    failure = rpc_failure(
        checkpoints.PutCheckpointWrites,
        cp.PutCheckpointWritesRequest(
            parent=THREAD, checkpoint_id="01", writes=[cp.PendingWrite(task_id="t")]
        ),
    )
    assert (failure.reason, failure.fields) == ("INVALID_FIELD", ("writes[0].channel",))
    failure = rpc_failure(
        checkpoints.ListCheckpoints,
        cp.ListCheckpointsRequest(parent=THREAD, metadata_filter={"source": "input"}),
    )
    assert failure.fields == ("metadata_filter['source']",)
    failure = rpc_failure(
        checkpoints.PruneThreads,
        cp.PruneThreadsRequest(parent="users/u1", thread_ids=["t/1"]),
    )
    assert set(failure.fields) == {"thread_ids[0]", "strategy"}
    failure = rpc_failure(
        checkpoints.CopyThread,
        cp.CopyThreadRequest(name=THREAD, target_name="users/u2/threads/t"),
    )
    assert failure.fields == ("target_name",)
    failure = rpc_failure(
        checkpoints.PutCheckpoint,
        cp.PutCheckpointRequest(
            checkpoint=cp.Checkpoint(
                thread_name=THREAD, checkpoint_id="01", checkpoint_ns="x" * 1025
            )
        ),
    )
    assert (failure.reason, failure.fields) == ("FIELD_TOO_LARGE", ("checkpoint.checkpoint_ns",))


def test_an_import_refuses_a_checkpoint_of_another_user_or_twice(channel: grpc.Channel) -> None:
    record = gv.ExportRecord(
        checkpoint=cp.Checkpoint(thread_name="users/u2/threads/t", checkpoint_id="01", type="json")
    )
    twice = gv.ExportRecord(checkpoint=cp.Checkpoint(thread_name=THREAD, checkpoint_id="01"))
    failure = rpc_failure(
        load, channel, "u1", [record, twice, twice, gv.ExportRecord(checkpoint=cp.Checkpoint())]
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")
    assert set(failure.fields) == {
        "records[0].checkpoint.thread_name",
        "records[2].checkpoint.checkpoint_id",
        "records[3].checkpoint.thread_name",
        "records[3].checkpoint.checkpoint_id",
    }
    assert export(channel, "u1") == []
