"""Many writers through two ``mnemo serve`` processes sharing one database, on
both backends: every write answers OK or ``ABORTED`` with a reason, never
an error that mentions a lock (SQLite's "database is locked" in particular:
the two processes fight for the file's write lock), and the shared history
stays dense."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, memories_pb2_grpc, working_memory_pb2_grpc
from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.history import all_messages
from tests.support.rpc_errors import error_details
from tests.support.subprocess_server import subprocess_server

WRITERS_PER_PROCESS = 4
ROUNDS_PER_WRITER = 8
CONVERSATION = "users/u1/conversations/shared"
STATE = f"{CONVERSATION}/memoryState"
WAIT_S = 60


def _writer(target: str, writer: int) -> tuple[int, list[str]]:
    """Appends, remembers, keyed saves and whole-state saves on shared
    resources; returns the acknowledged appends and every failure seen."""
    failures: list[str] = []
    appended = 0
    with grpc.insecure_channel(target) as channel:
        history = conversations_pb2_grpc.ConversationServiceStub(channel)
        working = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
        memories = memories_pb2_grpc.MemoryServiceStub(channel)
        calls: list[Callable[[int], object]] = [
            lambda n: history.AppendMessages(
                cv.AppendMessagesRequest(
                    conversation=CONVERSATION,
                    messages=[
                        cv.HistoryMessage(
                            message_json=json.dumps({"role": "user", "content": f"{writer} {n}"})
                        )
                    ],
                ),
                timeout=WAIT_S,
            ),
            lambda n: working.RememberExchange(
                wm.RememberExchangeRequest(name=STATE, exchange=wm.Exchange(ask=f"{writer} {n}")),
                timeout=WAIT_S,
            ),
            lambda n: memories.CreateMemory(
                pb.CreateMemoryRequest(
                    parent="users/u1", memory=pb.Memory(text=f"{writer} {n}", key=f"k{n % 3}")
                ),
                timeout=WAIT_S,
            ),
            lambda n: working.SaveMemoryState(
                wm.SaveMemoryStateRequest(
                    memory_state=wm.MemoryState(name=STATE, summary=f"{writer} {n}")
                ),
                timeout=WAIT_S,
            ),
        ]
        for n in range(ROUNDS_PER_WRITER):
            for number, call in enumerate(calls):
                try:
                    call(n)
                except grpc.RpcError as error:
                    details = error_details(error)
                    failures.append(f"{details.code.name} {details.reason}: {details.message}")
                else:
                    appended += number == 0
    return appended, failures


def test_two_processes_many_writers_never_surface_a_lock(database_url: str, tmp_path: Path) -> None:
    with (
        subprocess_server(database_url, log_dir=tmp_path / "a") as first,
        subprocess_server(database_url, log_dir=tmp_path / "b") as second,
    ):
        targets = [first.target, second.target] * WRITERS_PER_PROCESS
        with ThreadPoolExecutor(len(targets)) as pool:
            results = list(pool.map(_writer, targets, range(len(targets))))
        with grpc.insecure_channel(first.target) as channel:
            history = all_messages(
                conversations_pb2_grpc.ConversationServiceStub(channel), CONVERSATION
            )
        logs = first.log_text() + second.log_text()

    failures = [failure for _, per_writer in results for failure in per_writer]
    assert [f for f in failures if not f.startswith("ABORTED ") or f.startswith("ABORTED :")] == []
    assert [f for f in failures if "lock" in f.lower()] == []
    assert "Traceback" not in logs
    appended = sum(count for count, _ in results)
    assert [m.position for m in history] == list(range(appended))
