"""How many SQL statements the checkpoint RPCs that a LangGraph step makes
run (``MnemoSaver``: a put, a writes call, a read), counted by the driver as
``tests/api/test_statement_counts.py`` counts the other hot RPCs: SQLite
counts include ``BEGIN`` and ``COMMIT``, PostgreSQL's do not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from mnemo.v1 import checkpoints_pb2 as cp
from mnemo.v1 import checkpoints_pb2_grpc
from tests.support.server import running_server
from tests.support.statement_log import StatementLog, store_statements

THREAD = "users/counted/threads/t1"
Stub = checkpoints_pb2_grpc.CheckpointServiceStub


@pytest.fixture
def log() -> Iterator[StatementLog]:
    with StatementLog() as installed:
        yield installed


@pytest.fixture
def stub(log: StatementLog, database_url: str) -> Iterator[Stub]:
    with (
        running_server(database_url, purge_interval_seconds=3600, read_connections=1) as target,
        grpc.insecure_channel(target) as channel,
    ):
        yield checkpoints_pb2_grpc.CheckpointServiceStub(channel)


def _put(s: Stub, n: int) -> Any:
    return s.PutCheckpoint(
        cp.PutCheckpointRequest(
            checkpoint=cp.Checkpoint(
                thread_name=THREAD,
                checkpoint_id=f"{n:04d}",
                parent_checkpoint_id=f"{n - 1:04d}",
                type="msgpack",
                checkpoint=b"\x01" * 1000,
                metadata_json='{"source": "loop", "step": 1}',
            )
        )
    )


def _writes(s: Stub, n: int) -> Any:
    return s.PutCheckpointWrites(
        cp.PutCheckpointWritesRequest(
            parent=THREAD,
            checkpoint_id=f"{n:04d}",
            writes=[
                cp.PendingWrite(task_id="task", idx=i, channel=f"ch{i}", type="msgpack", value=b"x")
                for i in range(2)
            ],
        )
    )


def _get(s: Stub, n: int) -> Any:
    return s.GetCheckpoint(cp.GetCheckpointRequest(parent=THREAD))


def _list(s: Stub, n: int) -> Any:
    return s.ListCheckpoints(cp.ListCheckpointsRequest(parent=THREAD, page_size=10))


CASES: dict[str, tuple[Callable[[Stub, int], Any], int, int]] = {
    # The user (insert ignoring a conflict), the upsert, the change feed (two
    # statements on SQLite, one on PostgreSQL).
    "PutCheckpoint": (_put, 6, 3),
    # The user, one insert per write (RETURNING tells a kept write), the feed.
    "PutCheckpointWrites (2 writes)": (_writes, 7, 4),
    # The newest checkpoint, its writes.
    "GetCheckpoint": (_get, 4, 2),
    # The keys of the page, their rows, their writes.
    "ListCheckpoints": (_list, 5, 3),
}


@pytest.mark.parametrize("case", list(CASES))
def test_statements_per_call(
    case: str, stub: Stub, log: StatementLog, backend: str, request: pytest.FixtureRequest
) -> None:
    for n in (1, 2, 3):
        _put(stub, n)
        _writes(stub, n)
    call, sqlite_count, postgres_count = CASES[case]
    call(stub, 4)  # warm: every statement of the path prepared once
    with log.counting() as statements:
        call(stub, 5)
    expected = sqlite_count if backend == "sqlite" else postgres_count
    counted = store_statements(statements, citus="citus" in request.node.name)
    assert len(counted) == expected, "\n".join(statements)
