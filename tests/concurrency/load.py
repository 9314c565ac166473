"""A write load for crash and signal tests: client threads that each write in
sequence, every write with a request_id, retrying a write whose outcome is
unknown (the server died or went away) under the same request_id until it is
acknowledged, so each write must land exactly once.

A write counts as done only once acknowledged; what it returned is recorded
then. ``check`` reads everything back through a server and compares:

- appends (two messages per call) to one shared conversation: every
  acknowledged message present once, at the position it was acknowledged
  with, positions dense;
- RememberExchange on one state per client: the exchanges that fell off
  (as acknowledged) plus the recent ones are exactly the client's exchanges,
  in order, once each;
- keyed CreateMemory: every acknowledged entry present once, one unarchived
  entry per key;
- the user's change feed: cursors unique and growing, and the
  ``change_cursor`` every write acknowledged is in it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import (
    conversations_pb2_grpc,
    memories_pb2_grpc,
    sync_pb2_grpc,
    working_memory_pb2_grpc,
)
from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.history import all_messages
from tests.api.memories import listed
from tests.support.rpc_errors import error_details

USER = "users/u1"
CONVERSATION = f"{USER}/conversations/load"
KEYS = 3
CALL_TIMEOUT_S = 10.0
GIVE_UP_S = 120.0
"""How long one write is retried before the client records a failure."""
UNKNOWN_OUTCOME = {
    grpc.StatusCode.UNAVAILABLE,  # the connection broke or was refused
    grpc.StatusCode.DEADLINE_EXCEEDED,  # the server was down for the whole call
    # A call that reaches a stopping server before it has sent GOAWAY, but
    # after it stopped accepting work, is cancelled by gRPC without running.
    grpc.StatusCode.CANCELLED,
}
RETRYABLE = ("ABORTED", "CONCURRENT_MODIFICATION")
CHANNEL_OPTIONS = (
    # Reconnect quickly to a restarted server (the default backoff grows to minutes).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
)


@dataclass
class Tally:
    """What one client saw."""

    acknowledged: int = 0
    failed_attempts: Counter[str] = field(default_factory=Counter)
    """Attempts with an unknown outcome, by status code (retried)."""
    failures: list[str] = field(default_factory=list)
    """Errors that are not allowed: the test fails on any."""
    replayed: int = 0
    """Writes whose failed attempt had committed (the retry returned the
    first result, stamped before the retry was sent)."""


class Client(threading.Thread):
    """Writes ``send(n)`` for n = 0, 1, ... until ``stop`` is set (finishing
    the write in progress)."""

    def __init__(self, target: Callable[[], str], number: int, stop: threading.Event) -> None:
        super().__init__(name=f"load-{type(self).__name__}-{number}", daemon=True)
        self.target, self.number, self.stop = target, number, stop
        self._channel: grpc.Channel | None = None
        self._channel_target = ""
        self.tally = Tally()
        self.in_flight = 0
        self.completions: list[float] = []
        """``time.monotonic()`` at each acknowledgement."""
        self.change_cursors: list[int] = []
        """The ``change_cursor`` of each acknowledged write."""

        self.prepare()

    def run(self) -> None:
        try:
            n = 0
            while not self.stop.is_set() and self._until_acknowledged(n):
                n += 1
        except Exception as error:  # reported by the test, not lost in the thread
            self.tally.failures.append(f"{self.name} crashed: {error!r}")
            raise
        finally:
            if self._channel is not None:
                self._channel.close()

    def _follow_the_server(self) -> None:
        """(Re)connect when the server's target is new (a restart may have had
        to take another port)."""
        target = self.target()
        if target == self._channel_target:
            return
        if self._channel is not None:
            self._channel.close()
        self._channel = grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
        self._channel_target = target
        self.connect(self._channel)

    def _until_acknowledged(self, n: int) -> bool:
        deadline = time.monotonic() + GIVE_UP_S
        retried_after = None
        while time.monotonic() < deadline:
            self._follow_the_server()
            self.in_flight += 1
            try:
                response = self.send(n)
            except grpc.RpcError as error:
                details = error_details(error)
                if (
                    details.code in UNKNOWN_OUTCOME
                    or (details.code.name, details.reason) == RETRYABLE
                ):
                    self.tally.failed_attempts[details.code.name] += 1
                    retried_after = retried_after or time.time()
                    time.sleep(0.05)
                    continue
                self.tally.failures.append(
                    f"write {n}: {details.code.name} {details.reason}: {details.message}"
                )
                return False
            finally:
                self.in_flight -= 1
            self.completions.append(time.monotonic())
            self.tally.acknowledged += 1
            if retried_after is not None and self.stamped(response) < retried_after:
                self.tally.replayed += 1
            self.change_cursors.append(response.change_cursor)
            try:
                self.acknowledge(n, response)
            except AssertionError as error:
                self.tally.failures.append(f"write {n} acknowledged wrongly: {error}")
                return False
            return True
        self.tally.failures.append(f"write {n}: not acknowledged within {GIVE_UP_S}s")
        return False

    def call_options(self) -> dict[str, Any]:
        return {"timeout": CALL_TIMEOUT_S, "wait_for_ready": True}

    def prepare(self) -> None:
        """Set up what the client records."""

    def connect(self, channel: grpc.Channel) -> None:
        raise NotImplementedError

    def send(self, n: int) -> Any:
        raise NotImplementedError

    def stamped(self, response: Any) -> float:
        """When the server wrote what ``response`` reports (epoch seconds)."""
        raise NotImplementedError

    def acknowledge(self, n: int, response: Any) -> None:
        raise NotImplementedError


class Appender(Client):
    """Two messages per AppendMessages call to the shared conversation."""

    def prepare(self) -> None:
        self.positions: dict[str, int] = {}
        """Acknowledged message text -> its position."""

    def connect(self, channel: grpc.Channel) -> None:
        self.stub = conversations_pb2_grpc.ConversationServiceStub(channel)

    def texts(self, n: int) -> list[str]:
        return [f"appender {self.number} call {n} part {part}" for part in (0, 1)]

    def send(self, n: int) -> cv.AppendMessagesResponse:
        messages = [
            cv.HistoryMessage(message_json=json.dumps({"role": "user", "content": text}))
            for text in self.texts(n)
        ]
        response: cv.AppendMessagesResponse = self.stub.AppendMessages(
            cv.AppendMessagesRequest(
                conversation=CONVERSATION,
                messages=messages,
                request_id=f"append-{self.number}-{n}",
            ),
            **self.call_options(),
        )
        return response

    def stamped(self, response: cv.AppendMessagesResponse) -> float:
        return float(response.messages[0].create_time.ToNanoseconds()) / 1e9

    def acknowledge(self, n: int, response: cv.AppendMessagesResponse) -> None:
        stored = [json.loads(m.message_json)["content"] for m in response.messages]
        assert stored == self.texts(n)
        for message, text in zip(response.messages, stored, strict=True):
            self.positions[text] = message.position


class Rememberer(Client):
    """RememberExchange on this client's own working memory."""

    def prepare(self) -> None:
        self.state = f"{USER}/conversations/remember-{self.number}/memoryState"
        self.evicted: list[str] = []
        self.sent: list[str] = []

    def connect(self, channel: grpc.Channel) -> None:
        self.stub = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)

    def send(self, n: int) -> wm.RememberExchangeResponse:
        response: wm.RememberExchangeResponse = self.stub.RememberExchange(
            wm.RememberExchangeRequest(
                name=self.state,
                exchange=wm.Exchange(ask=f"ask {n}", answer=f"answer {n}"),
                request_id=f"remember-{self.number}-{n}",
            ),
            **self.call_options(),
        )
        return response

    def stamped(self, response: wm.RememberExchangeResponse) -> float:
        return float(response.memory_state.update_time.ToNanoseconds()) / 1e9

    def acknowledge(self, n: int, response: wm.RememberExchangeResponse) -> None:
        assert response.memory_state.recent[-1].ask == f"ask {n}"
        self.sent.append(f"ask {n}")
        self.evicted.extend(e.ask for e in response.evicted)


class Creator(Client):
    """Keyed CreateMemory (keys reused, so saves archive each other)."""

    def prepare(self) -> None:
        self.created: dict[str, str] = {}

    def connect(self, channel: grpc.Channel) -> None:
        self.stub = memories_pb2_grpc.MemoryServiceStub(channel)
        """Acknowledged text -> entry name."""

    def send(self, n: int) -> pb.CreateMemoryResponse:
        response: pb.CreateMemoryResponse = self.stub.CreateMemory(
            pb.CreateMemoryRequest(
                parent=USER,
                memory=pb.Memory(text=f"creator {self.number} fact {n}", key=f"key-{n % KEYS}"),
                request_id=f"create-{self.number}-{n}",
            ),
            **self.call_options(),
        )
        return response

    def stamped(self, response: pb.CreateMemoryResponse) -> float:
        return float(response.memory.create_time.ToNanoseconds()) / 1e9

    def acknowledge(self, n: int, response: pb.CreateMemoryResponse) -> None:
        self.created[response.memory.text] = response.memory.name


@dataclass
class WriteLoad:
    """Running client threads; ``acknowledged()`` counts their writes so far."""

    clients: Sequence[Client]
    stop: threading.Event

    def acknowledged(self) -> int:
        return sum(client.tally.acknowledged for client in self.clients)

    def in_flight(self) -> int:
        return sum(client.in_flight for client in self.clients)

    def wait_for_more(self, count: int, timeout: float = GIVE_UP_S) -> None:
        """Wait until ``count`` more writes are acknowledged."""
        goal = self.acknowledged() + count
        deadline = time.monotonic() + timeout
        while self.acknowledged() < goal:
            assert time.monotonic() < deadline, f"the load stalled at {self.acknowledged()}"
            assert all(c.is_alive() for c in self.clients), self.failures()
            time.sleep(0.01)

    def finish(self) -> None:
        """Stop after the writes in progress are acknowledged."""
        self.stop.set()
        for client in self.clients:
            client.join(GIVE_UP_S)
            assert not client.is_alive(), f"{client.name} did not finish"

    def failures(self) -> list[str]:
        return [f for client in self.clients for f in client.tally.failures]

    def failed_attempts(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for client in self.clients:
            total.update(client.tally.failed_attempts)
        return total

    def replayed(self) -> int:
        return sum(client.tally.replayed for client in self.clients)

    def check(self, target: str) -> None:
        """Everything acknowledged is stored exactly once (module docstring)."""
        assert self.failures() == []
        with grpc.insecure_channel(target) as channel:
            self._check_appends(conversations_pb2_grpc.ConversationServiceStub(channel))
            self._check_remembers(working_memory_pb2_grpc.WorkingMemoryServiceStub(channel))
            self._check_creates(memories_pb2_grpc.MemoryServiceStub(channel))
            self._check_changes(feed_cursors(channel))

    def _of(self, kind: type[Client]) -> list[Any]:
        return [client for client in self.clients if isinstance(client, kind)]

    def _check_appends(self, stub: conversations_pb2_grpc.ConversationServiceStub) -> None:
        history = all_messages(stub, CONVERSATION, page_size=1000)
        assert [m.position for m in history] == list(range(len(history)))  # dense
        stored = {json.loads(m.message_json)["content"]: m.position for m in history}
        assert len(stored) == len(history)  # no duplicate
        acknowledged: dict[str, int] = {}
        for appender in self._of(Appender):
            acknowledged |= appender.positions
        # Every write was retried until acknowledged: nothing else is stored.
        assert stored == acknowledged, _difference(acknowledged, stored)

    def _check_remembers(self, stub: working_memory_pb2_grpc.WorkingMemoryServiceStub) -> None:
        for client in self._of(Rememberer):
            state = stub.GetMemoryState(wm.GetMemoryStateRequest(name=client.state)).memory_state
            assert client.evicted + [e.ask for e in state.recent] == client.sent

    def _check_creates(self, stub: memories_pb2_grpc.MemoryServiceStub) -> None:
        every = listed(stub, include_archived=True)
        counts = Counter(m.text for m in every)
        assert [t for t, c in counts.items() if c > 1] == []  # no duplicate
        acknowledged: dict[str, str] = {}
        for creator in self._of(Creator):
            acknowledged |= creator.created
        assert {m.text: m.name for m in every} == acknowledged, _difference(
            acknowledged, {m.text: m.name for m in every}
        )
        current = listed(stub)
        assert sorted(m.key for m in current) == sorted({m.key for m in every})

    def _check_changes(self, feed: list[int]) -> None:
        """The change feed agrees: one change per cursor, cursors growing, and
        the cursor each write acknowledged is in it."""
        assert feed == sorted(set(feed))
        acknowledged = [cursor for client in self.clients for cursor in client.change_cursors]
        assert 0 not in acknowledged
        assert set(acknowledged) <= set(feed)


def _difference(acknowledged: dict[str, Any], stored: dict[str, Any]) -> str:
    missing = sorted(set(acknowledged) - set(stored))
    unacknowledged = sorted(set(stored) - set(acknowledged))
    moved = sorted(
        f"{key}: acknowledged {acknowledged[key]}, stored {stored[key]}"
        for key in set(acknowledged) & set(stored)
        if acknowledged[key] != stored[key]
    )
    return (
        f"acknowledged but missing: {missing[:10]} ({len(missing)}); stored but never "
        f"acknowledged: {unacknowledged[:10]} ({len(unacknowledged)}); "
        f"elsewhere than acknowledged: {moved[:10]} ({len(moved)})"
    )


def feed_cursors(channel: grpc.Channel) -> list[int]:
    """The cursor of every change in the user's feed, through ListChanges."""
    stub = sync_pb2_grpc.SyncServiceStub(channel)
    cursors: list[int] = []
    while True:
        after = cursors[-1] if cursors else 0
        page = stub.ListChanges(sy.ListChangesRequest(parent=USER, after_cursor=after))
        if not page.changes:
            return cursors
        cursors.extend(change.cursor for change in page.changes)


@contextmanager
def write_load(
    target: Callable[[], str], appenders: int = 3, rememberers: int = 1, creators: int = 1
) -> Iterator[WriteLoad]:
    """Start the client threads against ``target()``, the server's current
    target (followed across restarts); stops them (waiting for the writes in
    progress) when the block ends."""
    stop = threading.Event()
    kinds: list[type[Client]] = [Appender] * appenders + [Rememberer] * rememberers
    kinds += [Creator] * creators
    clients = [kind(target, number, stop) for number, kind in enumerate(kinds)]
    load = WriteLoad(clients, stop)
    for client in clients:
        client.start()
    try:
        yield load
    finally:
        stop.set()
        for client in clients:
            client.join(GIVE_UP_S)
