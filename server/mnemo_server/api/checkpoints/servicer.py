"""CheckpointService: validate (``api.checkpoints.requests``), build the
command or call the read, convert (``api.checkpoints.convert``)."""

from __future__ import annotations

from typing import Any

import grpc

from mnemo.v1 import checkpoints_pb2 as pb
from mnemo.v1 import checkpoints_pb2_grpc as pb_grpc
from mnemo_server.api.checkpoints import requests
from mnemo_server.api.checkpoints.convert import (
    checkpoint_from_proto,
    checkpoint_to_proto,
    write_from_proto,
)
from mnemo_server.api.validation import Validator, user_of
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.domain.checkpoints import CheckpointQuery, PruneStrategy
from mnemo_server.domain.commands.checkpoints import (
    CopyThread,
    DeleteCheckpointsForRuns,
    DeleteThread,
    PruneThreads,
    PutCheckpoint,
    PutCheckpointWrites,
)
from mnemo_server.domain.usecases.checkpoints import Checkpoints
from mnemo_server.domain.usecases.writes import Writes

Context = grpc.aio.ServicerContext[Any, Any]

_STRATEGIES = {
    pb.PRUNE_STRATEGY_KEEP_LATEST: PruneStrategy.KEEP_LATEST,
    pb.PRUNE_STRATEGY_DELETE: PruneStrategy.DELETE,
}


class CheckpointServicer(pb_grpc.CheckpointServiceServicer):
    """Graph checkpoints over gRPC."""

    def __init__(self, checkpoints: Checkpoints, writes: Writes) -> None:
        self._checkpoints = checkpoints
        self._writes = writes

    async def PutCheckpoint(
        self, request: pb.PutCheckpointRequest, context: Context
    ) -> pb.PutCheckpointResponse:
        scope = current_scope()
        value = request.checkpoint
        v = Validator()
        key = requests.thread(v, value.thread_name, "checkpoint.thread_name", scope)
        requests.checkpoint(v, value)
        v.raise_if_invalid()
        written = await self._writes(
            PutCheckpoint(
                caller=caller_of(scope),
                user_id=key.user_id,
                checkpoint=checkpoint_from_proto(key, value),
            )
        )
        return pb.PutCheckpointResponse(
            checkpoint=checkpoint_to_proto(key.user_id, written.value),
            change_cursor=written.change_cursor,
        )

    async def PutCheckpointWrites(
        self, request: pb.PutCheckpointWritesRequest, context: Context
    ) -> pb.PutCheckpointWritesResponse:
        scope = current_scope()
        v = Validator()
        key = requests.thread(v, request.parent, "parent", scope)
        requests.checkpoint_keys(v, request.checkpoint_ns, request.checkpoint_id)
        v.required(request.checkpoint_id, "checkpoint_id")
        requests.writes(v, request.writes)
        v.raise_if_invalid()
        written = await self._writes(
            PutCheckpointWrites(
                caller=caller_of(scope),
                user_id=key.user_id,
                thread_id=key.thread_id,
                checkpoint_ns=request.checkpoint_ns,
                checkpoint_id=request.checkpoint_id,
                writes=tuple(write_from_proto(w) for w in request.writes),
            )
        )
        return pb.PutCheckpointWritesResponse(
            written_count=written.value, change_cursor=written.change_cursor
        )

    async def GetCheckpoint(
        self, request: pb.GetCheckpointRequest, context: Context
    ) -> pb.GetCheckpointResponse:
        v = Validator()
        key = requests.thread(v, request.parent, "parent", current_scope())
        requests.checkpoint_keys(v, request.checkpoint_ns, request.checkpoint_id)
        v.raise_if_invalid()
        found = await self._checkpoints.get(key, request.checkpoint_ns, request.checkpoint_id)
        return pb.GetCheckpointResponse(checkpoint=checkpoint_to_proto(key.user_id, found))

    async def ListCheckpoints(
        self, request: pb.ListCheckpointsRequest, context: Context
    ) -> pb.ListCheckpointsResponse:
        v = Validator()
        key = requests.thread(v, request.parent, "parent", current_scope())
        namespace = request.checkpoint_ns if request.HasField("checkpoint_ns") else None
        requests.checkpoint_keys(v, namespace or "", request.before_checkpoint_id)
        wanted = requests.metadata_filter(v, request.metadata_filter, "metadata_filter")
        limit = requests.page_size(request.page_size, v)
        v.raise_if_invalid()
        found = await self._checkpoints.list(
            CheckpointQuery(
                key=key,
                checkpoint_ns=namespace,
                metadata_filter=wanted,
                before=request.before_checkpoint_id,
                limit=limit,
            )
        )
        return pb.ListCheckpointsResponse(
            checkpoints=[checkpoint_to_proto(key.user_id, c) for c in found],
            next_before_checkpoint_id=found[-1].checkpoint_id if len(found) == limit else "",
        )

    async def DeleteThread(
        self, request: pb.DeleteThreadRequest, context: Context
    ) -> pb.DeleteThreadResponse:
        scope = current_scope()
        key = requests.parse_thread(request.name, "name", scope)
        written = await self._writes(
            DeleteThread(caller=caller_of(scope), user_id=key.user_id, thread_id=key.thread_id)
        )
        return pb.DeleteThreadResponse(
            deleted_count=written.value, change_cursor=written.change_cursor
        )

    async def CopyThread(
        self, request: pb.CopyThreadRequest, context: Context
    ) -> pb.CopyThreadResponse:
        scope = current_scope()
        v = Validator()
        source = requests.thread(v, request.name, "name", scope)
        target = requests.thread(v, request.target_name, "target_name", scope)
        if source.user_id and target.user_id and source.user_id != target.user_id:
            v.invalid("target_name", "must be a thread of the same user as name")
        v.raise_if_invalid()
        written = await self._writes(
            CopyThread(
                caller=caller_of(scope),
                user_id=source.user_id,
                source_thread_id=source.thread_id,
                target_thread_id=target.thread_id,
            )
        )
        return pb.CopyThreadResponse(
            copied_count=written.value, change_cursor=written.change_cursor
        )

    async def PruneThreads(
        self, request: pb.PruneThreadsRequest, context: Context
    ) -> pb.PruneThreadsResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        thread_ids = requests.thread_ids(v, request.thread_ids, "thread_ids")
        strategy = _STRATEGIES.get(request.strategy)
        if strategy is None:
            v.invalid("strategy", "must be PRUNE_STRATEGY_KEEP_LATEST or PRUNE_STRATEGY_DELETE")
        v.raise_if_invalid()
        assert strategy is not None
        written = await self._writes(
            PruneThreads(
                caller=caller_of(scope),
                user_id=user_id,
                thread_ids=tuple(thread_ids),
                strategy=strategy,
            )
        )
        return pb.PruneThreadsResponse(
            deleted_count=written.value, change_cursor=written.change_cursor
        )

    async def DeleteCheckpointsForRuns(
        self, request: pb.DeleteCheckpointsForRunsRequest, context: Context
    ) -> pb.DeleteCheckpointsForRunsResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        run_ids = requests.ids(v, request.run_ids, "run_ids")
        v.raise_if_invalid()
        written = await self._writes(
            DeleteCheckpointsForRuns(caller=caller_of(scope), user_id=user_id, run_ids=run_ids)
        )
        return pb.DeleteCheckpointsForRunsResponse(
            deleted_count=written.value, change_cursor=written.change_cursor
        )
