"""The writes of graph checkpoints: ``CheckpointService`` (``domain.checkpoints``).

Each is idempotent by its keys (a retry stores the same rows again), so none
carries a request id.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_server.domain.checkpoints import (
    PendingWrite,
    PruneStrategy,
    StoredCheckpoint,
    ThreadKey,
)
from mnemo_server.domain.commands import DEFAULT_WEIGHT, Command

__all__ = [
    "CopyThread",
    "DeleteCheckpointsForRuns",
    "DeleteThread",
    "PruneThreads",
    "PutCheckpoint",
    "PutCheckpointWrites",
]


@dataclass(frozen=True, kw_only=True)
class PutCheckpoint(Command[StoredCheckpoint]):
    """Store ``checkpoint`` (its ``pending_writes`` are ignored), replacing
    the one with the same thread, namespace and id and keeping that one's
    writes. The result: the checkpoint as stored (with its time), without
    writes. Raises nothing of its own."""

    checkpoint: StoredCheckpoint

    @property
    def key(self) -> ThreadKey:
        return ThreadKey(self.user_id, self.checkpoint.thread_id)

    @property
    def weight(self) -> int:
        return DEFAULT_WEIGHT + len(self.checkpoint.checkpoint) + len(self.checkpoint.metadata_json)


@dataclass(frozen=True, kw_only=True)
class PutCheckpointWrites(Command[int]):
    """Store ``writes`` on checkpoint (``checkpoint_ns``, ``checkpoint_id``)
    of thread ``thread_id``: a write whose (task_id, idx) is stored is kept,
    unless every write has a negative idx, and then they replace the stored
    ones. The result: how many were stored. Raises nothing of its own."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    writes: tuple[PendingWrite, ...]

    @property
    def key(self) -> ThreadKey:
        return ThreadKey(self.user_id, self.thread_id)

    @property
    def weight(self) -> int:
        return DEFAULT_WEIGHT + sum(len(w.value) for w in self.writes)


@dataclass(frozen=True, kw_only=True)
class DeleteThread(Command[int]):
    """Delete every checkpoint and write of the thread; how many checkpoints."""

    thread_id: str

    @property
    def key(self) -> ThreadKey:
        return ThreadKey(self.user_id, self.thread_id)


@dataclass(frozen=True, kw_only=True)
class CopyThread(Command[int]):
    """Copy every checkpoint and write of ``source_thread_id`` to
    ``target_thread_id`` (replacing rows with the same keys); how many
    checkpoints."""

    source_thread_id: str
    target_thread_id: str


@dataclass(frozen=True, kw_only=True)
class PruneThreads(Command[int]):
    """Prune the threads (``KEEP_LATEST``: the newest checkpoint of each
    namespace stays; ``DELETE``: none); how many checkpoints were deleted."""

    thread_ids: tuple[str, ...]
    strategy: PruneStrategy


@dataclass(frozen=True, kw_only=True)
class DeleteCheckpointsForRuns(Command[int]):
    """Delete the user's checkpoints (in every thread) whose metadata
    ``run_id`` is one of ``run_ids``, with their writes; how many."""

    run_ids: tuple[str, ...]
