"""Graph checkpoints of a user, for the user-data tests (export, import,
erasure; ``tests.api.user_data.populate``)."""

from __future__ import annotations

import json

import grpc
from google.protobuf.message import Message

from mnemo.v1 import checkpoints_pb2 as cp
from mnemo.v1 import checkpoints_pb2_grpc

THREADS = ("t1", "t2")


def populate_checkpoints(channel: grpc.Channel, user: str, mark: str) -> None:
    """Two threads, each with a root chain of two checkpoints and one in a
    subgraph namespace, arbitrary bytes with ``mark`` in them, and pending
    writes (regular and special) on the newest."""
    stub = checkpoints_pb2_grpc.CheckpointServiceStub(channel)
    for thread in THREADS:
        name = f"users/{user}/threads/{thread}"
        for ns, ids in (("", ("01", "02")), ("sub:1", ("05",))):
            parent = ""
            for checkpoint_id in ids:
                stub.PutCheckpoint(
                    cp.PutCheckpointRequest(
                        checkpoint=cp.Checkpoint(
                            thread_name=name,
                            checkpoint_ns=ns,
                            checkpoint_id=checkpoint_id,
                            parent_checkpoint_id=parent,
                            type="msgpack",
                            checkpoint=b"\x00\x80" + f"{mark} {thread} {checkpoint_id}".encode(),
                            metadata_json=json.dumps({"note": mark, "run_id": f"run-{thread}"}),
                        )
                    )
                )
                parent = checkpoint_id
        stub.PutCheckpointWrites(
            cp.PutCheckpointWritesRequest(
                parent=name,
                checkpoint_id="02",
                writes=[
                    cp.PendingWrite(
                        task_id="task",
                        idx=0,
                        channel="messages",
                        type="msgpack",
                        value=f"{mark}".encode(),
                        task_path="~a",
                    ),
                    cp.PendingWrite(
                        task_id="task", idx=-3, channel="__interrupt__", type="json", value=b"{}"
                    ),
                ],
            )
        )


def checkpoint_views(channel: grpc.Channel, user: str) -> list[Message]:
    """What ListCheckpoints shows of the user's threads."""
    stub = checkpoints_pb2_grpc.CheckpointServiceStub(channel)
    return [
        stub.ListCheckpoints(cp.ListCheckpointsRequest(parent=f"users/{user}/threads/{t}"))
        for t in THREADS
    ]
