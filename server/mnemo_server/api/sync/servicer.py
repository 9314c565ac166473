"""SyncService: a user's change feed, listed in pages or watched live.

The error contracts are those of ``protos/mnemo/v1/sync.proto`` and
``docs/api/sync.md``. The watch itself (backlog, live changes, heartbeats,
shutdown) is ``domain.change_watch``'s; this module adds what depends on the
transport: every message must be taken by the consumer within
``send_timeout_seconds``, or the watch ends with ``ABORTED``
(``WATCH_LAGGING``, metadata ``resume_cursor``) instead of queueing without
bound for a consumer that does not read.

A store that cannot be reached (PostgreSQL restarting, a killed backend)
raises ``Unavailable`` from the watch's read, which ends the call with
``UNAVAILABLE``, never ``INTERNAL`` (``store.engine.failures`` decides what counts
as unreachable; ``errors`` maps it): the client watches again from its last
cursor after a backoff. A cursor beyond the user's latest is ``OUT_OF_RANGE``
``CURSOR_AHEAD``, raised by the first read before anything is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc

from mnemo.v1 import sync_pb2 as pb
from mnemo.v1 import sync_pb2_grpc as pb_grpc
from mnemo_server.api import pagination
from mnemo_server.api.names import parse_user
from mnemo_server.api.sync import convert
from mnemo_server.api.sync.rules import RULES
from mnemo_server.api.validation import Validator, check_fields
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.domain.change_watch import ChangeFeed, Heartbeat
from mnemo_server.domain.errors import Aborted
from mnemo_server.rpc.peers import client_peer

Context = grpc.aio.ServicerContext[Any, Any]

CHANGES = pagination.PageSizes(default=100, maximum=1000)


def lagging(resume_cursor: int, seconds: float) -> Aborted:
    """The error ending a watch whose consumer stopped taking messages."""
    return Aborted(
        f"the watcher did not take a message within {seconds:g} seconds; "
        f"watch again from the last cursor received (at least {resume_cursor})",
        reason="WATCH_LAGGING",
        metadata={"resume_cursor": str(resume_cursor)},
    )


class SyncServicer(pb_grpc.SyncServiceServicer):
    """ListChanges and WatchChanges over gRPC."""

    def __init__(self, feed: ChangeFeed) -> None:
        self._feed = feed

    async def ListChanges(
        self, request: pb.ListChangesRequest, context: Context
    ) -> pb.ListChangesResponse:
        scope = current_scope()
        user_id = parse_user(request.parent, "parent", scope)
        v = Validator()
        check_fields(v, request, RULES)
        after = max(request.after_cursor, 0)
        limit = v.attempt(lambda: pagination.page_size(request.page_size, CHANGES), 0)
        v.raise_if_invalid()
        page = await self._feed.list_changes(caller_of(scope), user_id, after, limit=limit)
        return pb.ListChangesResponse(
            changes=[convert.change_to_proto(change) for change in page.changes],
            next_cursor=page.changes[-1].cursor if page.changes else after,
            latest_cursor=page.latest_cursor,
            oldest_cursor=page.oldest_cursor,
        )

    # grpc.aio's writer style (``context.write``, which the send timeout needs);
    # the generated base declares only the iterator style of a server stream.
    async def WatchChanges(  # type: ignore[override]
        self,
        request: pb.WatchChangesRequest,
        context: grpc.aio.ServicerContext[pb.WatchChangesRequest, pb.WatchChangesResponse],
    ) -> None:
        scope = current_scope()
        user_id = parse_user(request.parent, "parent", scope)
        v = Validator()
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        sent = request.after_cursor
        timeout = self._feed.settings.send_timeout_seconds
        # Without authentication the user names prove nothing: count by connection.
        peer = client_peer(context) if scope is None else None
        # Closed on the way out, whatever ends the call: the watch's slot is
        # free at once, not whenever the generator happens to be finalized.
        watch = self._feed.watch(caller_of(scope), user_id, sent, peer)
        async with contextlib.aclosing(watch):
            async for item in watch:
                if isinstance(item, Heartbeat):
                    message = convert.heartbeat_to_proto(item)
                else:
                    message = pb.WatchChangesResponse(change=convert.change_to_proto(item))
                try:
                    await asyncio.wait_for(context.write(message), timeout)
                except TimeoutError:
                    raise lagging(sent, timeout) from None
                except Exception:
                    # A send fails only when the call is over (the client cancelled
                    # or its deadline passed): nobody is left to tell.
                    return
                if not isinstance(item, Heartbeat):
                    sent = item.cursor
