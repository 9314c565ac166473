"""Graph checkpoint calls (``mnemo.v1.CheckpointService``; LangGraph's
``MnemoSaver`` is built on them).

Each function builds one call; its docstring is the client method's docstring.
A thread is named by its user and thread id; checkpoints by namespace and id.
The bytes are stored as given: the client never decodes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from mnemo.client._calls import Rpc, UnaryCall
from mnemo.client._names import _id, user_name
from mnemo.v1 import checkpoints_pb2 as cp
from mnemo.v1.checkpoints_pb2_grpc import CheckpointServiceStub

PruneStrategyName = Literal["keep_latest", "delete"]

_STRATEGIES = {
    "keep_latest": cp.PRUNE_STRATEGY_KEEP_LATEST,
    "delete": cp.PRUNE_STRATEGY_DELETE,
}


def thread_name(user: str, thread: str) -> str:
    """``users/{user}/threads/{thread}``."""
    return f"{user_name(user)}/threads/{_id(thread, 'thread')}"


def _rpc(method: str) -> Rpc:
    return Rpc(CheckpointServiceStub, method)


def _checkpoint(response: Any) -> cp.Checkpoint:
    found: cp.Checkpoint = response.checkpoint
    return found


def _count(field: str) -> Any:
    return lambda response: int(getattr(response, field))


def put_checkpoint(
    user: str,
    thread: str,
    *,
    checkpoint_id: str,
    type: str,
    checkpoint: bytes,
    metadata_json: str = "{}",
    checkpoint_ns: str = "",
    parent_checkpoint_id: str = "",
    timeout: float | None = None,
) -> UnaryCall[cp.PutCheckpointRequest, cp.Checkpoint]:
    """Store a checkpoint (replacing one with the same thread, namespace and id);
    returns it as stored, without its bytes.

    ``type`` and ``checkpoint`` are a serializer's output (LangGraph's
    ``serde.dumps_typed``); ``metadata_json`` a JSON object.

    Raises:
        InvalidArgumentError: a malformed name or field (``INVALID_NAME``,
            ``INVALID_FIELD``, ``FIELD_TOO_LARGE``).
    """
    request = cp.PutCheckpointRequest(
        checkpoint=cp.Checkpoint(
            thread_name=thread_name(user, thread),
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=parent_checkpoint_id,
            type=type,
            checkpoint=checkpoint,
            metadata_json=metadata_json,
        )
    )
    return UnaryCall(_rpc("PutCheckpoint"), request, _checkpoint, timeout)


def put_checkpoint_writes(
    user: str,
    thread: str,
    *,
    checkpoint_id: str,
    writes: Iterable[cp.PendingWrite],
    checkpoint_ns: str = "",
    timeout: float | None = None,
) -> UnaryCall[cp.PutCheckpointWritesRequest, int]:
    """Store pending writes on a checkpoint; returns how many were stored.

    A write whose (``task_id``, ``idx``) is stored is kept, unless every write
    of the call has a negative ``idx`` (a special channel): then they replace.

    Raises:
        InvalidArgumentError: a malformed name or write (``INVALID_NAME``,
            ``INVALID_FIELD``, ``FIELD_TOO_LARGE``).
    """
    request = cp.PutCheckpointWritesRequest(
        parent=thread_name(user, thread),
        checkpoint_ns=checkpoint_ns,
        checkpoint_id=checkpoint_id,
        writes=writes,
    )
    return UnaryCall(_rpc("PutCheckpointWrites"), request, _count("written_count"), timeout)


def get_checkpoint(
    user: str,
    thread: str,
    *,
    checkpoint_ns: str = "",
    checkpoint_id: str = "",
    timeout: float | None = None,
) -> UnaryCall[cp.GetCheckpointRequest, cp.Checkpoint]:
    """Read a checkpoint with its pending writes (``checkpoint_id`` ``""``: the
    newest of the namespace).

    Raises:
        InvalidArgumentError: a malformed name or field.
        NotFoundError: no such checkpoint (``NOT_FOUND``).
    """
    request = cp.GetCheckpointRequest(
        parent=thread_name(user, thread), checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id
    )
    return UnaryCall(_rpc("GetCheckpoint"), request, _checkpoint, timeout)


def list_checkpoints_page(
    user: str,
    thread: str,
    *,
    checkpoint_ns: str | None = None,
    metadata_filter: Mapping[str, Any] | None = None,
    before_checkpoint_id: str = "",
    page_size: int = 0,
    timeout: float | None = None,
) -> UnaryCall[cp.ListCheckpointsRequest, cp.ListCheckpointsResponse]:
    """One page of a thread's checkpoints, newest first, each with its
    pending writes; continue with the response's ``next_before_checkpoint_id``.

    ``checkpoint_ns`` ``None`` lists every namespace; ``metadata_filter``
    values are compared with the metadata's as JSON values.

    Raises:
        InvalidArgumentError: a malformed name or field.
    """
    request = cp.ListCheckpointsRequest(
        parent=thread_name(user, thread),
        checkpoint_ns=checkpoint_ns,
        metadata_filter={k: json.dumps(v) for k, v in (metadata_filter or {}).items()},
        before_checkpoint_id=before_checkpoint_id,
        page_size=page_size,
    )
    return UnaryCall(_rpc("ListCheckpoints"), request, lambda r: r, timeout)


def delete_thread(
    user: str, thread: str, *, timeout: float | None = None
) -> UnaryCall[cp.DeleteThreadRequest, int]:
    """Delete every checkpoint and write of a thread; returns how many
    checkpoints (0 for a thread without any: not an error).

    Raises:
        InvalidArgumentError: a malformed name (``INVALID_NAME``).
    """
    request = cp.DeleteThreadRequest(name=thread_name(user, thread))
    return UnaryCall(_rpc("DeleteThread"), request, _count("deleted_count"), timeout)


def copy_thread(
    user: str, source: str, target: str, *, timeout: float | None = None
) -> UnaryCall[cp.CopyThreadRequest, int]:
    """Copy every checkpoint and write of thread ``source`` to ``target``;
    returns how many checkpoints.

    Raises:
        InvalidArgumentError: a malformed name (``INVALID_NAME``).
    """
    request = cp.CopyThreadRequest(
        name=thread_name(user, source), target_name=thread_name(user, target)
    )
    return UnaryCall(_rpc("CopyThread"), request, _count("copied_count"), timeout)


def prune_threads(
    user: str,
    threads: Sequence[str],
    *,
    strategy: PruneStrategyName = "keep_latest",
    timeout: float | None = None,
) -> UnaryCall[cp.PruneThreadsRequest, int]:
    """Prune threads: ``keep_latest`` keeps the newest checkpoint of each
    namespace, ``delete`` removes all; returns how many were deleted.

    Raises:
        InvalidArgumentError: a malformed name, an unknown strategy.
    """
    request = cp.PruneThreadsRequest(
        parent=user_name(user),
        thread_ids=[_id(t, "thread") for t in threads],
        strategy=_STRATEGIES.get(strategy, cp.PRUNE_STRATEGY_UNSPECIFIED),
    )
    return UnaryCall(_rpc("PruneThreads"), request, _count("deleted_count"), timeout)


def delete_checkpoints_for_runs(
    user: str, run_ids: Sequence[str], *, timeout: float | None = None
) -> UnaryCall[cp.DeleteCheckpointsForRunsRequest, int]:
    """Delete the user's checkpoints (every thread) whose metadata ``run_id``
    is one of ``run_ids``; returns how many.

    Raises:
        InvalidArgumentError: a malformed name or run id.
    """
    request = cp.DeleteCheckpointsForRunsRequest(parent=user_name(user), run_ids=list(run_ids))
    return UnaryCall(_rpc("DeleteCheckpointsForRuns"), request, _count("deleted_count"), timeout)
