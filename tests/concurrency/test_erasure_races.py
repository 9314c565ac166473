"""DeleteUserData racing the user's own writes, through a real server: every
write lands before an erasure (and is erased) or after it (and stays, on a
user created anew), or at worst, after its bounded retries, answers the
retryable ``ABORTED`` / ``CONCURRENT_MODIFICATION``; never anything else
(no ``INTERNAL`` from a vanished user row, no deadlock), and every erasure
succeeds. On both backends."""

from __future__ import annotations

import json
import threading

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, memories_pb2_grpc
from mnemo.v1 import memories_pb2 as mm
from tests.api.user_data import erase, export
from tests.support.rpc_errors import error_details

USER = "racer"
WRITERS = 3
WRITES_PER_WRITER = 15
ERASURES = 12
RETRYABLE = (grpc.StatusCode.ABORTED, "CONCURRENT_MODIFICATION")


def _writer(channel: grpc.Channel, number: int, failures: list[str], done: list[int]) -> None:
    history = conversations_pb2_grpc.ConversationServiceStub(channel)
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    message = cv.HistoryMessage(message_json=json.dumps({"role": "user", "content": "hi"}))
    for i in range(WRITES_PER_WRITER):
        try:
            history.AppendMessages(
                cv.AppendMessagesRequest(
                    conversation=f"users/{USER}/conversations/w{number}", messages=[message]
                ),
                timeout=30,
            )
            memories.CreateMemory(
                mm.CreateMemoryRequest(
                    parent=f"users/{USER}",
                    memory=mm.Memory(
                        text=f"fact {number} {i}",
                        key=f"k{number}",
                        embedding=mm.Embedding(model="m", values=[1.0, float(i)]),
                    ),
                ),
                timeout=30,
            )
            done.append(i)
        except grpc.RpcError as error:
            details = error_details(error)
            if (details.code, details.reason) != RETRYABLE:
                failures.append(f"{details.code.name} {details.reason}: {details.message}")


def test_writes_racing_erasures_all_succeed(channel: grpc.Channel) -> None:
    failures: list[str] = []
    done: list[int] = []
    threads = [
        threading.Thread(target=_writer, args=(channel, n, failures, done)) for n in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    for _ in range(ERASURES):
        erase(channel, USER)
    for thread in threads:
        thread.join(120)
    assert failures == []
    assert len(done) > WRITERS * WRITES_PER_WRITER // 2
    erase(channel, USER)
    assert export(channel, USER) == []
