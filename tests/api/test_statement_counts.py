"""How many SQL statements each hot RPC runs, counted by the database driver
(``tests.support.statement_log``), on both backends: a deterministic count,
so that a change that adds a statement to a hot path shows here.

Each case prepares what the call needs (a user, a conversation, an entry),
then counts the statements of one call. The calls come one at a time, so
every write is a batch of its own (no savepoints). SQLite counts include
``BEGIN`` and ``COMMIT``; PostgreSQL's do not (psycopg sends them itself).
On PostgreSQL a write with a request id records it in the statement of its
change-feed append (``store.transactions.idempotency``): RememberExchange
4 -> 3; AppendMessages 4 -> 2, its conversation's advance and its messages'
insert being one statement too; CreateMemory 8 -> 6, the entry's insert
counting its terms too (issue 37).
The figures are documented in docs/performance.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mnemo.v1 import (
    conversations_pb2,
    conversations_pb2_grpc,
    governance_pb2,
    governance_pb2_grpc,
    memories_pb2,
    memories_pb2_grpc,
    working_memory_pb2,
    working_memory_pb2_grpc,
)
from tests.support.server import running_server
from tests.support.statement_log import StatementLog, store_statements

USER = "users/counted"
CONVERSATION = f"{USER}/conversations/c1"
STATE = f"{CONVERSATION}/memoryState"


@dataclass
class Stubs:
    health: Any
    working_memory: Any
    conversations: Any
    memories: Any
    governance: Any


@pytest.fixture
def log() -> Iterator[StatementLog]:
    with StatementLog() as installed:
        yield installed


@pytest.fixture
def stubs(log: StatementLog, database_url: str) -> Iterator[Stubs]:
    # No maintenance pass during the test: only the calls' own statements; one
    # read connection, so that a connection's first use (FTS5 reads its
    # settings) comes in the warm-up call.
    with (
        running_server(database_url, purge_interval_seconds=3600, read_connections=1) as target,
        grpc.insecure_channel(target) as channel,
    ):
        yield Stubs(
            health_pb2_grpc.HealthStub(channel),
            working_memory_pb2_grpc.WorkingMemoryServiceStub(channel),
            conversations_pb2_grpc.ConversationServiceStub(channel),
            memories_pb2_grpc.MemoryServiceStub(channel),
            governance_pb2_grpc.GovernanceServiceStub(channel),
        )


def _exchange(n: int) -> working_memory_pb2.Exchange:
    return working_memory_pb2.Exchange(ask=f"question {n}", answer=f"answer {n}")


def _remember(s: Stubs, n: int) -> None:
    s.working_memory.RememberExchange(
        working_memory_pb2.RememberExchangeRequest(
            name=STATE, exchange=_exchange(n), request_id=f"remember-{n}"
        )
    )


def _append(s: Stubs, n: int) -> None:
    message = json.dumps({"role": "user", "content": f"message {n}"})
    s.conversations.AppendMessages(
        conversations_pb2.AppendMessagesRequest(
            conversation=CONVERSATION,
            messages=[conversations_pb2.HistoryMessage(message_json=message)],
            run_id="run",
            request_id=f"append-{n}",
        )
    )


def _create_memory(s: Stubs, n: int) -> None:
    s.memories.CreateMemory(
        memories_pb2.CreateMemoryRequest(
            parent=USER,
            memory=memories_pb2.Memory(text=f"The user likes fact number {n}."),
            memory_id=f"m{n}",
            request_id=f"memory-{n}",
        )
    )


def _batch_create(s: Stubs, n: int, size: int, *, vectors: bool) -> None:
    """``size`` entries with client ids (and 4-dimensional vectors), one request id."""
    s.memories.BatchCreateMemories(
        memories_pb2.BatchCreateMemoriesRequest(
            parent=USER,
            requests=[
                memories_pb2.CreateMemoryRequest(
                    memory=memories_pb2.Memory(
                        text=f"The user likes fact number {n}.{i}.",
                        embedding=memories_pb2.Embedding(model="m", values=[1, 0, n, i])
                        if vectors
                        else None,
                    ),
                    memory_id=f"b{n}-{i}",
                )
                for i in range(size)
            ],
            request_id=f"batch-{n}",
        )
    )


def _recall(s: Stubs) -> None:
    list(s.memories.RecallMemories(memories_pb2.RecallMemoriesRequest(parent=USER, query="fact")))


def _prepared(s: Stubs) -> None:
    """The user, its conversation with a working memory and a message, an entry."""
    _remember(s, 0)
    _append(s, 0)
    _create_memory(s, 0)


Call = Callable[[Stubs, int], object]
"""A call, given a number to make its request ids and names its own."""

CASES: dict[str, tuple[Call, int, int]] = {
    # name: (the call, SQLite statements, PostgreSQL statements)
    "health Check": (lambda s, n: s.health.Check(health_pb2.HealthCheckRequest()), 0, 0),
    "GetMemoryState": (
        lambda s, n: s.working_memory.GetMemoryState(
            working_memory_pb2.GetMemoryStateRequest(name=STATE)
        ),
        3,
        1,
    ),
    "RememberExchange": (_remember, 7, 3),
    "SaveMemoryState": (
        lambda s, n: s.working_memory.SaveMemoryState(
            working_memory_pb2.SaveMemoryStateRequest(
                memory_state=working_memory_pb2.MemoryState(
                    name=STATE, summary="short", recent=[_exchange(9)]
                )
            )
        ),
        6,
        3,
    ),
    # PostgreSQL: the conversation's advance and the messages' insert are one
    # statement (store.conversations.messages), the feed and the record another.
    "AppendMessages": (_append, 8, 2),  # SQLite steps the changes insert per row
    "ListMessages (a page of 50)": (
        lambda s, n: s.conversations.ListMessages(
            conversations_pb2.ListMessagesRequest(parent=CONVERSATION, page_size=50)
        ),
        3,
        1,
    ),
    "GetConversation": (
        lambda s, n: s.conversations.GetConversation(
            conversations_pb2.GetConversationRequest(name=CONVERSATION)
        ),
        3,
        1,
    ),
    # The entry's term counts (memory_terms) are one upsert of every stem; on
    # PostgreSQL a CTE of the entry's insert (store.memories.writes).
    "CreateMemory": (_create_memory, 11, 6),
    # A batch of one is CreateMemory's statements; of ten entries with vectors
    # (SQLite steps each executemany per row: memories, FTS rows, vectors,
    # events, changes), the same statements as one entry with a vector (the
    # term counts: one upsert for the batch), plus the id check split over
    # entries and tombstones, plus the live entries with the batch's
    # fingerprints (one lookup: ``store.memories.duplicates``; for one entry
    # it shares the id check's statement).
    "BatchCreateMemories (1 entry)": (lambda s, n: _batch_create(s, n, 1, vectors=False), 11, 6),
    "BatchCreateMemories (10 entries, vectors)": (
        lambda s, n: _batch_create(s, n, 10, vectors=True),
        61,
        12,
    ),
    "GetMemory": (
        lambda s, n: s.memories.GetMemory(
            memories_pb2.GetMemoryRequest(name=f"{USER}/memories/m0")
        ),
        3,
        1,
    ),
    "ListMemories": (
        lambda s, n: s.memories.ListMemories(memories_pb2.ListMemoriesRequest(parent=USER)),
        3,
        1,
    ),
    # The gate, the query terms' statistics, the candidates (compact rows),
    # the hits' entries; on PostgreSQL the candidate read between setting
    # and resetting its planner options (store.memories.text_index).
    "RecallMemories": (lambda s, n: _recall(s), 6, 6),
    "SetConsent (unchanged)": (
        lambda s, n: s.governance.SetConsent(
            governance_pb2.SetConsentRequest(
                consent=governance_pb2.Consent(
                    name=f"{USER}/consent", state=governance_pb2.CONSENT_STATE_GRANTED
                )
            )
        ),
        5,
        3,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_statements_per_call(
    case: str, stubs: Stubs, log: StatementLog, backend: str, request: pytest.FixtureRequest
) -> None:
    _prepared(stubs)
    call, sqlite_count, postgres_count = CASES[case]
    call(stubs, 1)  # warm: every statement of the path prepared once
    with log.counting() as statements:
        call(stubs, 2)
    expected = sqlite_count if backend == "sqlite" else postgres_count
    counted = store_statements(statements, citus="citus" in request.node.name)
    assert len(counted) == expected, "\n".join(statements)


def test_a_recall_event_rides_the_next_write_batch(
    stubs: Stubs, log: StatementLog, backend: str
) -> None:
    """Recall records ``memory_recalled`` without a transaction of its own:
    the next write's transaction records it. That costs the user's tenant
    and the event there, and with two writes in the batch a savepoint
    around each: the first's SAVEPOINT, then its RELEASE with the second's
    SAVEPOINT (one round trip on PostgreSQL, two statements on SQLite), the
    second's released by the commit. No BEGIN, COMMIT or fsync of its own."""
    _prepared(stubs)
    _remember(stubs, 1)
    with log.counting() as alone:
        _remember(stubs, 2)
    _recall(stubs)
    with log.counting() as after_recall:
        _remember(stubs, 3)
    savepoints = 3 if backend == "sqlite" else 2
    assert len(after_recall) == len(alone) + 2 + savepoints, "\n".join(after_recall)
    assert sum("RELEASE SAVEPOINT" in s for s in after_recall) == 1, after_recall
    assert sum("INSERT INTO events" in s for s in after_recall) == 1
    assert sum(s.startswith("COMMIT") for s in after_recall) == (backend == "sqlite")
