"""Graph checkpoints (``domain.checkpoints``) as ``mnemo.v1`` messages, and
the writes of a request as domain values."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC

from mnemo.v1 import checkpoints_pb2 as pb
from mnemo_server.api.convert import timestamp
from mnemo_server.domain.checkpoints import (
    CheckpointRef,
    PendingWrite,
    StoredCheckpoint,
    ThreadKey,
    thread_name,
)

__all__ = [
    "checkpoint_from_proto",
    "checkpoint_to_proto",
    "ref_to_proto",
    "write_from_proto",
    "writes_to_proto",
]


def write_from_proto(write: pb.PendingWrite) -> PendingWrite:
    return PendingWrite(
        task_id=write.task_id,
        idx=write.idx,
        channel=write.channel,
        type=write.type,
        value=write.value,
        task_path=write.task_path,
    )


def checkpoint_from_proto(
    key: ThreadKey, value: pb.Checkpoint, *, with_writes: bool = False
) -> StoredCheckpoint:
    """``value`` (validated) as a checkpoint of ``key``'s thread; its
    ``create_time`` (when set) and pending writes only ``with_writes`` (an
    imported record: a put states neither)."""
    created = value.create_time.ToDatetime(tzinfo=UTC) if value.HasField("create_time") else None
    return StoredCheckpoint(
        thread_id=key.thread_id,
        checkpoint_ns=value.checkpoint_ns,
        checkpoint_id=value.checkpoint_id,
        parent_checkpoint_id=value.parent_checkpoint_id,
        type=value.type,
        checkpoint=value.checkpoint,
        metadata_json=value.metadata_json or "{}",
        create_time=created if with_writes else None,
        pending_writes=tuple(map(write_from_proto, value.pending_writes)) if with_writes else (),
    )


def writes_to_proto(writes: Iterable[PendingWrite]) -> list[pb.PendingWrite]:
    return [
        pb.PendingWrite(
            task_id=w.task_id,
            idx=w.idx,
            channel=w.channel,
            type=w.type,
            value=w.value,
            task_path=w.task_path,
        )
        for w in writes
    ]


def checkpoint_to_proto(user_id: str, value: StoredCheckpoint) -> pb.Checkpoint:
    """The checkpoint with its bytes and pending writes."""
    return pb.Checkpoint(
        thread_name=thread_name(ThreadKey(user_id, value.thread_id)),
        checkpoint_ns=value.checkpoint_ns,
        checkpoint_id=value.checkpoint_id,
        parent_checkpoint_id=value.parent_checkpoint_id,
        type=value.type,
        checkpoint=value.checkpoint,
        metadata_json=value.metadata_json,
        pending_writes=writes_to_proto(value.pending_writes),
        create_time=timestamp(value.create_time),
    )


def ref_to_proto(user_id: str, ref: CheckpointRef) -> pb.Checkpoint:
    """The change feed's checkpoint: no bytes, the writes without values."""
    return pb.Checkpoint(
        thread_name=thread_name(ThreadKey(user_id, ref.thread_id)),
        checkpoint_ns=ref.checkpoint_ns,
        checkpoint_id=ref.checkpoint_id,
        parent_checkpoint_id=ref.parent_checkpoint_id,
        type=ref.type,
        metadata_json=ref.metadata_json,
        pending_writes=[
            pb.PendingWrite(
                task_id=w.task_id, idx=w.idx, channel=w.channel, type=w.type, task_path=w.task_path
            )
            for w in ref.writes
        ],
        create_time=timestamp(ref.create_time),
    )
