"""ConversationService: the canonical history (Anvia's MemoryStore), failed runs, compaction."""

from __future__ import annotations

import json

import grpc

from mnemo.v1 import conversations_pb2 as cv
from tests.api.history import Stub, all_messages, append, contents, message, streamed_messages
from tests.support.rpc_errors import rpc_failure

C1 = "users/u1/conversations/c1"


def test_append_gives_dense_positions_and_names(conversations: Stub) -> None:
    first = append(conversations, C1, "a", "b", run_id="run-1", turn=0)
    second = append(conversations, C1, "c", run_id="run-1", turn=1)
    assert [m.position for m in first.messages] == [0, 1]
    assert [m.position for m in second.messages] == [2]
    assert second.messages[0].name == f"{C1}/messages/2"
    assert second.messages[0].run_id == "run-1" and second.messages[0].turn == 1
    assert second.messages[0].role == "user" and second.messages[0].text == "c"
    assert second.conversation.message_count == 3
    history = all_messages(conversations, C1)
    assert [m.position for m in history] == [0, 1, 2]
    assert contents(history) == ["a", "b", "c"]


def test_expected_position_mismatch_is_aborted_and_writes_nothing(conversations: Stub) -> None:
    append(conversations, C1, "a", "b")
    assert append(conversations, C1, "c", expected_position=2).messages[0].position == 2
    failure = rpc_failure(
        conversations.AppendMessages,
        cv.AppendMessagesRequest(conversation=C1, messages=[message("x")], expected_position=1),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "POSITION_MISMATCH")
    assert failure.metadata == {"expected_position": "1", "next_position": "3"}
    assert contents(all_messages(conversations, C1)) == ["a", "b", "c"]
    # expected_position 0 on a new conversation: "only if it is empty".
    fresh = append(conversations, "users/u1/conversations/new", "first", expected_position=0)
    assert fresh.messages[0].position == 0


def test_a_retry_with_the_same_request_id_returns_the_first_result(conversations: Stub) -> None:
    first = append(conversations, C1, "a", "b", request_id="req-1", run_id="r")
    retry = append(conversations, C1, "a", "b", request_id="req-1", run_id="r")
    assert retry.messages == first.messages
    assert len(all_messages(conversations, C1)) == 2


def test_a_request_id_reused_for_another_payload_is_refused(conversations: Stub) -> None:
    append(conversations, C1, "a", request_id="req-1")
    failure = rpc_failure(
        conversations.AppendMessages,
        cv.AppendMessagesRequest(conversation=C1, messages=[message("b")], request_id="req-1"),
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "REQUEST_ID_REUSED",
    )
    assert failure.metadata["request_id"] == "req-1"
    assert contents(all_messages(conversations, C1)) == ["a"]


def test_paged_and_streamed_history_are_the_same(conversations: Stub) -> None:
    for start in range(0, 250, 50):
        append(conversations, C1, *[f"m{i}" for i in range(start, start + 50)])
    paged = all_messages(conversations, C1, page_size=7)
    default_paged = all_messages(conversations, C1)
    streamed = streamed_messages(conversations, C1, batch_size=13)
    default_streamed = streamed_messages(conversations, C1)
    assert [m.position for m in paged] == list(range(250))
    assert paged == default_paged == streamed == default_streamed
    batches = list(
        conversations.StreamMessages(cv.StreamMessagesRequest(parent=C1, batch_size=100))
    )
    assert [len(b.messages) for b in batches] == [100, 100, 50]
    tail = conversations.ListMessages(cv.ListMessagesRequest(parent=C1, start_position=245))
    assert [m.position for m in tail.messages] == [245, 246, 247, 248, 249]
    assert not tail.next_page_token
    streamed_tail = conversations.StreamMessages(
        cv.StreamMessagesRequest(parent=C1, start_position=248)
    )
    assert [m.position for b in streamed_tail for m in b.messages] == [248, 249]


def test_history_of_a_missing_conversation_is_not_found(conversations: Stub) -> None:
    missing = "users/u1/conversations/missing"
    failure = rpc_failure(conversations.ListMessages, cv.ListMessagesRequest(parent=missing))
    assert failure.code is grpc.StatusCode.NOT_FOUND
    failure = rpc_failure(
        lambda r: list(conversations.StreamMessages(r)), cv.StreamMessagesRequest(parent=missing)
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_FOUND")


ANVIA_MESSAGES = [
    '{"role":"system","content":"You are helpful."}',
    '{"role": "user", "content": "Héllo \\u00e9 ☀ 日本語 \\ud83d\\ude00 😀",  "metadata": {"n": 1.0, "big": 1e3, "neg": -0.0, "exact": 12345678901234567890, "nested": {"a": [1, {"b": null}], "t": true}}}',
    json.dumps(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool-call",
                    "toolCallId": "call_1",
                    "toolName": "weather",
                    "input": {"city": "Paris", "days": 3},
                },
            ],
        },
        indent=2,
    ),
    '{"role":"tool","content":[{"type":"tool-result","toolCallId":"call_1","toolName":"weather","output":{"type":"json","value":{"temp":21.5}}}]}',
    '{"role":"user","content":[{"type":"image","image":"https://example.com/cat.png","mediaType":"image/png"},{"type":"file","data":"https://example.com/plan.pdf","mediaType":"application/pdf","filename":"plan.pdf"},{"type":"text","text":"see attached"}]}',
    '{"content":"order of keys kept","role":"assistant","z":1,"a":2}',
]


def test_anvia_messages_round_trip_byte_for_byte(conversations: Stub) -> None:
    request = cv.AppendMessagesRequest(
        conversation=C1,
        messages=[cv.HistoryMessage(message_json=m) for m in ANVIA_MESSAGES],
        run_id="run-1",
    )
    appended = conversations.AppendMessages(request).messages
    assert [m.message_json for m in appended] == ANVIA_MESSAGES
    for history in (all_messages(conversations, C1), streamed_messages(conversations, C1)):
        assert [m.message_json for m in history] == ANVIA_MESSAGES
        assert [m.role for m in history] == [json.loads(m)["role"] for m in ANVIA_MESSAGES]
    texts = [m.text for m in all_messages(conversations, C1)]
    assert texts[0] == "You are helpful."
    assert texts[1].startswith("Héllo é ☀ 日本語 😀")
    assert texts[2] == 'Let me look.\nweather({"city": "Paris", "days": 3})'
    assert "21.5" in texts[3]
    assert (
        texts[4]
        == "https://example.com/cat.png\nplan.pdf https://example.com/plan.pdf\nsee attached"
    )


def test_clear_removes_the_history_and_restarts_positions(conversations: Stub) -> None:
    append(conversations, C1, "a", "b")
    cleared = conversations.ClearMessages(cv.ClearMessagesRequest(conversation=C1)).conversation
    assert cleared.message_count == 0
    assert all_messages(conversations, C1) == []
    assert append(conversations, C1, "c").messages[0].position == 0


def _record_failed_run(stub: Stub, run_id: str, *texts: str) -> cv.FailedRun:
    request = cv.RecordFailedRunRequest(
        conversation=C1,
        run_id=run_id,
        error=cv.RunError(message="model timed out", code="TIMEOUT", details_json='{"after_s":30}'),
        messages=[message(t, role="assistant") for t in texts],
    )
    failed_run: cv.FailedRun = stub.RecordFailedRun(request).failed_run
    return failed_run


def test_failed_runs_are_recorded_apart_and_listable(conversations: Stub) -> None:
    append(conversations, C1, "question")
    recorded = [
        _record_failed_run(conversations, f"run-{i}", f"partial {i}a", f"partial {i}b")
        for i in range(3)
    ]
    first = recorded[0]
    assert first.name.startswith(f"{C1}/failedRuns/")
    assert first.run_id == "run-0"
    assert (first.error.message, first.error.code, first.error.details_json) == (
        "model timed out",
        "TIMEOUT",
        '{"after_s":30}',
    )
    assert contents(list(first.messages)) == ["partial 0a", "partial 0b"]
    assert contents(all_messages(conversations, C1)) == ["question"]  # canonical unchanged

    listed: list[cv.FailedRun] = []
    token = ""
    while True:
        page = conversations.ListFailedRuns(
            cv.ListFailedRunsRequest(parent=C1, page_size=2, page_token=token)
        )
        listed.extend(page.failed_runs)
        token = page.next_page_token
        if not token:
            break
    assert [r.run_id for r in listed] == ["run-2", "run-1", "run-0"]  # newest first
    assert listed[-1] == first


def test_a_failed_run_can_create_the_conversation(conversations: Stub) -> None:
    request = cv.RecordFailedRunRequest(
        conversation="users/u1/conversations/fresh", run_id="r", error=cv.RunError(message="boom")
    )
    assert conversations.RecordFailedRun(request).failed_run.run_id == "r"


def test_compaction_replaces_a_prefix_and_never_loses_canonical_messages(
    conversations: Stub,
) -> None:
    append(conversations, C1, *[f"m{i}" for i in range(6)])
    snapshot = conversations.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1))
    assert snapshot.revision
    assert contents(list(snapshot.messages)) == [f"m{i}" for i in range(6)]

    summary = message("summary of m0..m3", role="system")
    replaced = conversations.ReplaceHistoryPrefix(
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1,
            revision=snapshot.revision,
            message_count=4,
            replacement=[summary],
            run_id="compactor",
        )
    )
    assert replaced.revision != snapshot.revision
    assert contents(list(replaced.messages)) == ["summary of m0..m3", "m4", "m5"]
    assert replaced.messages[0].compacted and not replaced.messages[0].name
    assert not replaced.messages[1].compacted and replaced.messages[1].position == 4

    # Appends since the snapshot do not make its revision stale...
    append(conversations, C1, "m6")
    again = conversations.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1))
    assert again.revision == replaced.revision
    assert contents(list(again.messages)) == ["summary of m0..m3", "m4", "m5", "m6"]

    # ...another compaction does: the stale revision conflicts and changes nothing.
    failure = rpc_failure(
        conversations.ReplaceHistoryPrefix,
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1,
            revision=snapshot.revision,
            message_count=2,
            replacement=[message("lost", role="system")],
        ),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "REVISION_STALE")
    after = conversations.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1))
    assert after == again
    canonical = all_messages(conversations, C1)
    assert contents(canonical) == [f"m{i}" for i in range(7)]
    assert [m.position for m in canonical] == list(range(7))


def test_a_clear_makes_the_revision_stale(conversations: Stub) -> None:
    append(conversations, C1, "a", "b")
    snapshot = conversations.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1))
    conversations.ClearMessages(cv.ClearMessagesRequest(conversation=C1))
    append(conversations, C1, "c", "d")
    failure = rpc_failure(
        conversations.ReplaceHistoryPrefix,
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1, revision=snapshot.revision, message_count=1, replacement=[]
        ),
    )
    assert failure.reason == "REVISION_STALE"
    assert contents(all_messages(conversations, C1)) == ["c", "d"]


def test_compacting_more_than_the_projection_is_invalid(conversations: Stub) -> None:
    append(conversations, C1, "a", "b")
    snapshot = conversations.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1))
    failure = rpc_failure(
        conversations.ReplaceHistoryPrefix,
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1, revision=snapshot.revision, message_count=3
        ),
    )
    assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
    assert failure.fields == ("message_count",)
