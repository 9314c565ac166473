"""Anvia's MemoryStore over Mnemo, blocking and asyncio, through a real server.

The writes are counted by a small gRPC proxy in front of the server, which
can also lose an answer after the server has applied the write (the client
then sees ``UNAVAILABLE``), as a network cut would.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from mnemo.adapters._steps import RetryPolicy
from mnemo.adapters.anvia import (
    AsyncMnemoMemoryStore,
    HistorySnapshot,
    MemoryScope,
    MnemoMemoryStore,
    ReplaceResult,
    SavePolicy,
)
from mnemo.client import AsyncMnemoClient, MnemoClient, UnavailableError
from mnemo.v1 import conversations_pb2 as cv

pytestmark = pytest.mark.timeout(60)

APPEND = "/mnemo.v1.ConversationService/AppendMessages"
PROMPT = {"role": "user", "content": "What is my plan?"}
CALL = {
    "role": "assistant",
    "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "plan", "input": {}}],
}
RESULT = {
    "role": "tool",
    "content": [{"type": "tool-result", "toolCallId": "t1", "output": {"plan": "Pro"}}],
}
FINAL = {"role": "assistant", "content": "You are on the Pro plan."}


@dataclass
class Proxy:
    """Forwards every unary call to the server; counts them; can lose answers."""

    target: str = ""
    calls: Counter[str] = field(default_factory=Counter)
    requests: dict[str, list[bytes]] = field(default_factory=dict)
    #: How many answers of a method to lose after the server applied the call.
    lose: Counter[str] = field(default_factory=Counter)


@pytest.fixture
def proxy(mnemo_target: str) -> Iterator[Proxy]:
    state = Proxy()
    lock = threading.Lock()
    upstream = grpc.insecure_channel(mnemo_target)

    class Forward(grpc.GenericRpcHandler):  # type: ignore[type-arg]
        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:  # type: ignore[type-arg]
            method = details.method
            forward = upstream.unary_unary(method, None, None)

            def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
                with lock:
                    state.calls[method] += 1
                    state.requests.setdefault(method, []).append(request)
                response: bytes = forward(request, timeout=10)
                with lock:
                    lost = state.lose[method] > 0
                    state.lose[method] -= int(lost)
                if lost:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "the answer was lost")
                return response

            return grpc.unary_unary_rpc_method_handler(handle)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((Forward(),))
    state.target = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    try:
        yield state
    finally:
        server.stop(None).wait(5)
        upstream.close()


@pytest.fixture
def mnemo(mnemo_target: str) -> Iterator[MnemoClient]:
    with MnemoClient(mnemo_target) as client:
        yield client


def _history(mnemo: MnemoClient, user: str, session: str) -> list[tuple[Any, str, int]]:
    """(message, run id, turn) of every canonical message."""
    try:
        return [
            (json.loads(m.message_json), m.run_id, m.turn)
            for m in mnemo.list_messages(user, session)
        ]
    except Exception:  # the conversation does not exist yet
        return []


def test_load_append_clear_and_record_error(mnemo: MnemoClient, user: str) -> None:
    store = MnemoMemoryStore(mnemo, user_id=user)
    scope = MemoryScope("thread_123", metadata={"channel": "web"})

    assert store.load(scope) == []
    store.append(scope=scope, run_id="r1", turn=1, messages=[PROMPT, FINAL])
    store.append(scope=scope, run_id="r2", turn=1, messages=[])

    assert store.load(scope) == [PROMPT, FINAL]
    assert _history(mnemo, user, "thread_123") == [(PROMPT, "r1", 1), (FINAL, "r1", 1)]
    assert dict(mnemo.get_conversation(user, "thread_123").metadata) == {"channel": "web"}

    store.record_error(
        scope=scope, run_id="r2", error=TimeoutError("model timed out"), messages=[PROMPT]
    )
    store.record_error(scope=scope, run_id="r3", error={"message": "boom", "code": "E1"})
    failed = list(mnemo.list_failed_runs(user, "thread_123"))
    assert [(f.run_id, f.error.message, f.error.code) for f in failed] == [
        ("r3", "boom", "E1"),
        ("r2", "model timed out", ""),
    ]
    assert [json.loads(m.message_json) for m in failed[1].messages] == [PROMPT]

    store.clear(scope)
    store.clear(MemoryScope("never-written"))
    assert store.load(scope) == []
    assert len(list(mnemo.list_failed_runs(user, "thread_123"))) == 2


def test_the_scope_user_wins_over_the_store_default(mnemo: MnemoClient, user: str) -> None:
    store = MnemoMemoryStore(mnemo, user_id="someone-else")
    store.append(scope=MemoryScope("s", user_id=user), run_id="r", turn=0, messages=[PROMPT])

    assert store.load(MemoryScope("s", user_id=user)) == [PROMPT]
    with pytest.raises(ValueError):
        MnemoMemoryStore(mnemo).load(MemoryScope("s"))


def test_the_inspector_lists_and_gets_conversations(mnemo: MnemoClient, user: str) -> None:
    store = MnemoMemoryStore(mnemo, user_id=user)
    store.append(scope=MemoryScope("a"), run_id="r1", turn=1, messages=[PROMPT])
    store.append(
        scope=MemoryScope("b", metadata={"k": "v"}), run_id="r2", turn=3, messages=[PROMPT, FINAL]
    )

    listed = store.inspector.list_conversations()
    assert [(c.session_id, c.user_id, c.message_count) for c in listed] == [
        ("b", user, 2),
        ("a", user, 1),
    ]
    assert listed[0].metadata == {"k": "v"}
    assert listed[0].created_at <= listed[0].updated_at
    assert len(store.inspector.list_conversations(limit=1)) == 1
    assert store.inspector.list_conversations(user_id="nobody-here") == []

    record = store.inspector.get_conversation(listed[0].ref)
    assert record is not None
    assert record.conversation == listed[0]
    assert [(m.position, m.run_id, m.turn, m.message) for m in record.messages] == [
        (0, "r2", 3, PROMPT),
        (1, "r2", 3, FINAL),
    ]
    assert store.inspector.get_conversation(f"users/{user}/conversations/none") is None


def test_compaction_commits_then_reports_a_stale_revision_as_conflict(
    mnemo: MnemoClient, user: str
) -> None:
    store = MnemoMemoryStore(mnemo, user_id=user)
    scope = MemoryScope("long")
    assert store.compaction.snapshot(scope) == HistorySnapshot("", [])
    store.append(scope=scope, run_id="r1", turn=1, messages=[PROMPT, CALL, RESULT, FINAL])
    summary = {"role": "system", "content": "The user asked about their plan: Pro."}

    first = store.compaction.snapshot(scope)
    second = store.compaction.snapshot(scope)
    committed = store.compaction.replace_prefix(
        scope=scope, revision=first.revision, message_count=3, replacement=summary, run_id="c1"
    )
    stale = store.compaction.replace_prefix(
        scope=scope, revision=second.revision, message_count=2, replacement=[summary]
    )

    assert first.messages == [PROMPT, CALL, RESULT, FINAL]
    assert committed.committed and committed.revision
    assert stale == ReplaceResult("conflict")
    assert store.load(scope) == [PROMPT, CALL, RESULT, FINAL]  # the canonical history
    assert store.compaction.snapshot(scope) == HistorySnapshot(committed.revision, [summary, FINAL])
    assert len(_history(mnemo, user, "long")) == 4  # canonical messages are never deleted


def _play(store: MnemoMemoryStore, scope: MemoryScope, policy: SavePolicy, see: Any) -> None:
    """One two-turn run (tool call, then the final answer), looking after each step."""
    run = store.run(scope, "run-1", policy)
    run.completed(PROMPT, turn=1)
    see("prompt")
    run.completed(CALL, turn=1)
    run.completed(RESULT, turn=1)
    see("tool result")
    run.turn_completed(1)
    see("turn 1")
    run.completed(FINAL, turn=2)
    see("final")
    run.turn_completed(2)
    see("turn 2")
    run.succeeded()
    see("succeeded")
    assert run.messages == [PROMPT, CALL, RESULT, FINAL]


EXPECTED_WRITES: dict[str, dict[str, list[tuple[Any, str, int]]]] = {
    "message": {
        "prompt": [(PROMPT, "run-1", 1)],
        "tool result": [(PROMPT, "run-1", 1), (CALL, "run-1", 1), (RESULT, "run-1", 1)],
        "turn 1": [(PROMPT, "run-1", 1), (CALL, "run-1", 1), (RESULT, "run-1", 1)],
        "final": [
            (PROMPT, "run-1", 1),
            (CALL, "run-1", 1),
            (RESULT, "run-1", 1),
            (FINAL, "run-1", 2),
        ],
    },
    "turn": {
        "prompt": [],
        "tool result": [],
        "turn 1": [(PROMPT, "run-1", 1), (CALL, "run-1", 1), (RESULT, "run-1", 1)],
        "final": [(PROMPT, "run-1", 1), (CALL, "run-1", 1), (RESULT, "run-1", 1)],
        "turn 2": [
            (PROMPT, "run-1", 1),
            (CALL, "run-1", 1),
            (RESULT, "run-1", 1),
            (FINAL, "run-1", 2),
        ],
    },
    "run": {
        "prompt": [],
        "tool result": [],
        "turn 1": [],
        "final": [],
        "turn 2": [],
        "succeeded": [
            (PROMPT, "run-1", 2),
            (CALL, "run-1", 2),
            (RESULT, "run-1", 2),
            (FINAL, "run-1", 2),
        ],
    },
}
#: The messages of each AppendMessages call, by policy.
EXPECTED_APPENDS = {"message": [1, 1, 1, 1], "turn": [3, 1], "run": [4]}


@pytest.mark.parametrize("policy", ["message", "turn", "run"])
def test_each_save_policy_makes_exactly_its_writes(
    proxy: Proxy, mnemo: MnemoClient, user: str, policy: SavePolicy
) -> None:
    seen: dict[str, list[tuple[Any, str, int]]] = {}
    with MnemoClient(proxy.target) as through_proxy:
        store = MnemoMemoryStore(through_proxy, user_id=user)
        _play(
            store,
            MemoryScope("s1"),
            policy,
            lambda step: seen.update({step: _history(mnemo, user, "s1")}),
        )

    expected = EXPECTED_WRITES[policy]
    last = expected.get("turn 2", expected["final"])
    assert seen == {
        "prompt": expected["prompt"],
        "tool result": expected["tool result"],
        "turn 1": expected["turn 1"],
        "final": expected["final"],
        "turn 2": last,
        "succeeded": expected.get("succeeded", last),
    }
    sizes = [_append_size(request) for request in proxy.requests.get(APPEND, [])]
    assert sizes == EXPECTED_APPENDS[policy]


def _append_size(request: bytes) -> int:
    return len(cv.AppendMessagesRequest.FromString(request).messages)


def test_a_failed_run_records_its_messages_and_writes_no_more_history(
    mnemo: MnemoClient, user: str
) -> None:
    store = MnemoMemoryStore(mnemo, user_id=user)
    run = store.run(MemoryScope("s1"), "run-9", "turn")
    run.completed(PROMPT, turn=1)
    run.completed(CALL, turn=1)
    run.completed(RESULT, turn=1)
    run.turn_completed(1)
    run.completed(CALL, turn=2)
    run.failed(RuntimeError("the model went away"))

    assert [m for m, _, _ in _history(mnemo, user, "s1")] == [PROMPT, CALL, RESULT]
    (failed,) = mnemo.list_failed_runs(user, "s1")
    assert (failed.run_id, failed.error.message) == ("run-9", "the model went away")
    assert [json.loads(m.message_json) for m in failed.messages] == [PROMPT, CALL, RESULT, CALL]
    with pytest.raises(RuntimeError):
        run.completed(FINAL, turn=2)


def test_an_append_whose_answer_was_lost_is_written_once(
    proxy: Proxy, mnemo: MnemoClient, user: str
) -> None:
    proxy.lose[APPEND] = 2
    with MnemoClient(proxy.target, max_attempts=1) as through_proxy:
        store = MnemoMemoryStore(through_proxy, user_id=user, retry=RetryPolicy(3, 0.01))
        store.append(scope=MemoryScope("s1"), run_id="r1", turn=1, messages=[PROMPT, FINAL])
        # The agent's own retry of a write whose outcome it never learnt: applied once too.
        store.append(scope=MemoryScope("s1"), run_id="r1", turn=1, messages=[PROMPT, FINAL])

    assert proxy.calls[APPEND] == 4
    assert [m for m, _, _ in _history(mnemo, user, "s1")] == [PROMPT, FINAL]
    ids = {cv.AppendMessagesRequest.FromString(r).request_id for r in proxy.requests[APPEND]}
    assert len(ids) == 1 and ids != {""}


def test_a_write_still_unanswered_after_the_retries_raises(proxy: Proxy, user: str) -> None:
    proxy.lose[APPEND] = 5
    with MnemoClient(proxy.target, max_attempts=1) as through_proxy:
        store = MnemoMemoryStore(through_proxy, user_id=user, retry=RetryPolicy(2, 0.01))
        with pytest.raises(UnavailableError):
            store.append(scope=MemoryScope("s1"), run_id="r1", turn=1, messages=[PROMPT])
    assert proxy.calls[APPEND] == 2


async def test_the_asyncio_store_does_the_same(mnemo_target: str, user: str) -> None:
    async with AsyncMnemoClient(mnemo_target) as mnemo:
        store = AsyncMnemoMemoryStore(mnemo, user_id=user)
        scope = MemoryScope("async-thread")
        assert await store.load(scope) == []

        run = store.run(scope, "run-1", "run")
        await run.completed(PROMPT, turn=1)
        await run.turn_completed(1)
        assert await store.load(scope) == []
        await run.completed(FINAL, turn=2)
        await run.succeeded()
        assert await store.load(scope) == [PROMPT, FINAL]

        await store.append(scope=scope, run_id="r2", turn=1, messages=[CALL, RESULT])
        snapshot = await store.compaction.snapshot(scope)
        summary = {"role": "system", "content": "summary"}
        done = await store.compaction.replace_prefix(
            scope=scope, revision=snapshot.revision, message_count=2, replacement=[summary]
        )
        again = await store.compaction.replace_prefix(
            scope=scope, revision=snapshot.revision, message_count=1, replacement=[summary]
        )
        assert (done.status, again.status) == ("committed", "conflict")
        assert await store.load(scope) == [PROMPT, FINAL, CALL, RESULT]

        await store.record_error(scope=scope, run_id="r3", error="failed", messages=[PROMPT])
        failing = store.run(scope, "r4", "message")
        await failing.completed(PROMPT, turn=1)
        await failing.failed("again")
        listed = await store.inspector.list_conversations()
        assert [(c.session_id, c.message_count) for c in listed] == [("async-thread", 5)]
        record = await store.inspector.get_conversation(listed[0].ref)
        assert record is not None and [m.position for m in record.messages] == [0, 1, 2, 3, 4]
        runs = [r async for r in mnemo.list_failed_runs(user, "async-thread")]
        assert [r.run_id for r in runs] == ["r4", "r3"]

        await store.clear(scope)
        assert await store.load(scope) == []
