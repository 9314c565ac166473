"""Graph checkpoints (``CheckpointService``; LangGraph's checkpoint savers).

A thread ``users/{user}/threads/{thread}`` holds checkpoints keyed by
(``checkpoint_ns``, ``checkpoint_id``) and, per checkpoint, pending writes
keyed by (``task_id``, ``idx``). The payloads are the client's serialized
bytes with their type tags; the server never decodes them. Only the metadata
is read, as a JSON object: ``ListCheckpoints`` filters on it and its
``run_id`` names the run that made the checkpoint (``DeleteCheckpointsForRuns``).

Checkpoint ids order a thread: newest is the greatest id as text (LangGraph's
uuid6 ids sort by time), as in LangGraph's own SQL savers.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemo_server.domain.names import user_name

MAX_NAMESPACE_CHARS = 1024
"""``checkpoint_ns``, a write's ``channel`` and ``task_path``."""
MAX_CHECKPOINT_METADATA_BYTES = 65_536
"""A checkpoint's metadata, as JSON text."""
MAX_WRITES_PER_CALL = 1000
"""Writes of one ``PutCheckpointWrites``; threads of one ``PruneThreads``;
run ids of one ``DeleteCheckpointsForRuns``."""


@dataclass(frozen=True, slots=True)
class ThreadKey:
    """A thread of a user."""

    user_id: str
    thread_id: str


def thread_name(key: ThreadKey) -> str:
    return f"{user_name(key.user_id)}/threads/{key.thread_id}"


def checkpoint_name(key: ThreadKey, checkpoint_id: str) -> str:
    """The resource name of a checkpoint in the change feed (with its
    namespace in the change's state)."""
    return f"{thread_name(key)}/checkpoints/{checkpoint_id}"


class PruneStrategy(enum.Enum):
    """``mnemo.v1.PruneStrategy``."""

    KEEP_LATEST = "keep_latest"
    DELETE = "delete"


@dataclass(frozen=True, kw_only=True)
class PendingWrite:
    """A pending write of a task on a checkpoint; ``value`` as the client
    serialized it (``type`` its serializer's tag)."""

    task_id: str
    idx: int
    channel: str
    type: str
    value: bytes
    task_path: str = ""


@dataclass(frozen=True, kw_only=True)
class StoredCheckpoint:
    """A checkpoint of thread ``thread_id`` (of the user the read or write is
    for), with its pending writes in (task_path, task_id, idx) order when
    read (none in a write)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str
    type: str
    checkpoint: bytes
    metadata_json: str
    create_time: datetime | None = None
    pending_writes: tuple[PendingWrite, ...] = ()

    @property
    def run_id(self) -> str | None:
        """The metadata's ``run_id`` when it is a string."""
        return run_id_of(self.metadata_json)


@dataclass(frozen=True, kw_only=True)
class WriteRef:
    """A pending write without its value (the change feed's)."""

    task_id: str
    idx: int
    channel: str
    type: str
    task_path: str = ""


@dataclass(frozen=True, kw_only=True)
class CheckpointRef:
    """A checkpoint as the change feed records it: everything but the bytes
    (checkpoints are large; a syncing client reads the one it wants with
    ``GetCheckpoint``), with the writes the change stored."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str = ""
    type: str = ""
    metadata_json: str = "{}"
    create_time: datetime | None = None
    writes: tuple[WriteRef, ...] = ()


def ref_of(checkpoint: StoredCheckpoint, writes: tuple[PendingWrite, ...] = ()) -> CheckpointRef:
    """The feed's view of ``checkpoint`` (and of ``writes`` on it)."""
    return CheckpointRef(
        thread_id=checkpoint.thread_id,
        checkpoint_ns=checkpoint.checkpoint_ns,
        checkpoint_id=checkpoint.checkpoint_id,
        parent_checkpoint_id=checkpoint.parent_checkpoint_id,
        type=checkpoint.type,
        metadata_json=checkpoint.metadata_json,
        create_time=checkpoint.create_time,
        writes=tuple(
            WriteRef(
                task_id=w.task_id, idx=w.idx, channel=w.channel, type=w.type, task_path=w.task_path
            )
            for w in writes
        ),
    )


def run_id_of(metadata_json: str) -> str | None:
    """The ``run_id`` string of a metadata JSON object, if any."""
    try:
        found = json.loads(metadata_json).get("run_id")
    except (ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def _same(actual: Any, wanted: Any) -> bool:
    # JSON equality: booleans are not numbers (Python's True == 1 is not JSON's).
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return isinstance(actual, bool) and isinstance(wanted, bool) and actual == wanted
    return bool(actual == wanted)


def metadata_matches(metadata_json: str, wanted: Mapping[str, Any]) -> bool:
    """Whether the metadata object has every key of ``wanted`` with an equal
    JSON value (a key that is absent matches only ``null``)."""
    if not wanted:
        return True
    try:
        metadata = json.loads(metadata_json)
    except ValueError:
        return False
    if not isinstance(metadata, dict):
        return False
    return all(_same(metadata.get(key), value) for key, value in wanted.items())


@dataclass(frozen=True, kw_only=True)
class CheckpointQuery:
    """What ``ListCheckpoints`` asks for: ``checkpoint_ns`` ``None`` is every
    namespace; ``metadata_filter`` values are decoded JSON; ``before`` an id
    (``""``: none)."""

    key: ThreadKey
    checkpoint_ns: str | None
    metadata_filter: Mapping[str, Any]
    before: str
    limit: int
