"""Watching and writing a change feed in tests (``tests/api/test_sync*.py``)."""

from __future__ import annotations

import queue
import threading

import grpc

from mnemo.client import MnemoClient
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1 import sync_pb2_grpc

USER = "u1"
PARENT = f"users/{USER}"
WAIT_S = 30.0
"""Bound on every wait for a streamed message (never reached when things work)."""

Event = sy.WatchChangesResponse


class Watch:
    """A WatchChanges call read by a thread into a queue; ``None`` ends it,
    or the ``grpc.RpcError`` that ended it."""

    def __init__(
        self, target: str, after_cursor: int = 0, metadata: object = None, user: str = USER
    ) -> None:
        self._channel = grpc.insecure_channel(target)
        stub = sync_pb2_grpc.SyncServiceStub(self._channel)
        request = sy.WatchChangesRequest(parent=f"users/{user}", after_cursor=after_cursor)
        self.call = stub.WatchChanges(request, timeout=120, metadata=metadata)
        self.items: queue.Queue[Event | grpc.RpcError | None] = queue.Queue()
        self.held: list[Event] = []  # looked at, not yet taken
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for event in self.call:
                self.items.put(event)
            self.items.put(None)
        except grpc.RpcError as error:
            self.items.put(error)

    def next(self) -> Event | grpc.RpcError | None:
        if self.held:
            return self.held.pop()
        return self.items.get(timeout=WAIT_S)

    def next_event(self) -> Event:
        item = self.next()
        assert isinstance(item, Event), f"expected a message, got {item!r}"
        return item

    def changes_until_heartbeat(self) -> list[sy.Change]:
        """The changes before the next heartbeat."""
        changes = []
        while (event := self.next_event()).HasField("change"):
            changes.append(event.change)
        return changes

    def changes_until(self, cursor: int) -> list[sy.Change]:
        """The changes up to and including ``cursor`` (heartbeats skipped)."""
        changes: list[sy.Change] = []
        while not changes or changes[-1].cursor < cursor:
            event = self.next_event()
            if event.HasField("change"):
                changes.append(event.change)
        return changes

    def close(self) -> None:
        self.call.cancel()
        self._thread.join(WAIT_S)
        self._channel.close()


def write(client: MnemoClient, count: int, prefix: str = "c") -> list[int]:
    """``count`` appends of one message each; the cursor each one returned
    (its last change: an append changes the message and the conversation)."""
    return [
        client.append_messages(
            USER, "chat", [{"role": "user", "content": f"{prefix}{i}"}]
        ).change_cursor
        for i in range(count)
    ]


def cursors(changes: list[sy.Change]) -> list[int]:
    return [change.cursor for change in changes]
