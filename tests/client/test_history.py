"""Conversation history through a real server, with the blocking and the asyncio client."""

from __future__ import annotations

import datetime
import json

import grpc
import pytest

from mnemo.client import (
    InvalidArgumentError,
    MnemoClient,
    NotFoundError,
    PositionMismatchError,
    RevisionStaleError,
)
from mnemo.client import _history as history
from mnemo.v1.conversations_pb2_grpc import ConversationServiceStub

USER_MESSAGE = {"role": "user", "content": "Où est ma voiture ? 🚗"}
ASSISTANT_JSON = '{"role":"assistant","content":[{"type":"text","text":"Level 3."}]}'


def _said(number: int) -> dict[str, str]:
    return {"role": "user", "content": f"m{number}"}


def test_messages_round_trip_byte_for_byte(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    appended = client.append_messages(
        user, "s1", [USER_MESSAGE, ASSISTANT_JSON], run_id="run-1", turn=2
    )

    assert [m.position for m in appended.messages] == [0, 1]
    assert appended.conversation.message_count == 2
    loaded = list(other_client.list_messages(user, "s1"))
    assert [m.message_json for m in loaded] == [
        json.dumps(USER_MESSAGE, separators=(",", ":"), ensure_ascii=False),
        ASSISTANT_JSON,
    ]
    assert [(m.role, m.run_id, m.turn) for m in loaded] == [
        ("user", "run-1", 2),
        ("assistant", "run-1", 2),
    ]
    assert loaded[1].text == "Level 3."


def test_list_and_stream_return_the_whole_history_in_order(client: MnemoClient, user: str) -> None:
    client.append_messages(user, "s1", [_said(n) for n in range(7)])
    expected = [json.dumps(_said(n), separators=(",", ":")) for n in range(7)]

    paged = [m.message_json for m in client.list_messages(user, "s1", page_size=3)]
    streamed = [m.message_json for m in client.stream_messages(user, "s1", batch_size=2)]
    tail = [m.position for m in client.stream_messages(user, "s1", start_position=5)]
    page = client.list_messages_page(user, "s1", start_position=2, page_size=2)

    assert paged == streamed == expected
    assert tail == [5, 6]
    assert [m.position for m in page.items] == [2, 3]
    assert page.next_page_token


def test_an_unexpected_position_writes_nothing(client: MnemoClient, user: str) -> None:
    client.append_messages(user, "s1", [_said(0), _said(1)], expected_position=0)

    with pytest.raises(PositionMismatchError) as raised:
        client.append_messages(user, "s1", [_said(2)], expected_position=1)

    error = raised.value
    assert (error.code, error.reason) == (grpc.StatusCode.ABORTED, "POSITION_MISMATCH")
    assert error.metadata["next_position"] == "2"
    assert client.get_conversation(user, "s1").message_count == 2


def test_resending_a_built_append_writes_it_once(mnemo_target: str, user: str) -> None:
    call = history.append_messages(user, "s1", [_said(0), _said(1)])
    with grpc.insecure_channel(mnemo_target) as channel:
        stub = ConversationServiceStub(channel)
        first = stub.AppendMessages(call.request, timeout=10)
        again = stub.AppendMessages(call.request, timeout=10)

    assert call.request.request_id
    assert again == first
    assert again.conversation.message_count == 2


def test_an_explicit_request_id_makes_a_manual_retry_safe(client: MnemoClient, user: str) -> None:
    first = client.append_messages(user, "s1", [_said(0)], request_id="append-1")
    again = client.append_messages(user, "s1", [_said(0)], request_id="append-1")
    other = client.append_messages(user, "s1", [_said(0)])  # a new call: a new request id

    assert again == first
    assert [m.position for m in other.messages] == [1]


def test_clear_restarts_positions_and_keeps_failed_runs(client: MnemoClient, user: str) -> None:
    client.append_messages(user, "s1", [_said(0), _said(1)])
    recorded = client.record_failed_run(
        user,
        "s1",
        run_id="run-9",
        error="model timed out",
        error_code="TIMEOUT",
        error_details={"after_s": 30},
        messages=[_said(2)],
    )

    assert client.clear_messages(user, "s1").message_count == 0
    assert [m.position for m in client.append_messages(user, "s1", [_said(3)]).messages] == [0]
    (listed,) = client.list_failed_runs(user, "s1")
    assert listed == recorded
    assert (listed.run_id, listed.error.code) == ("run-9", "TIMEOUT")
    assert json.loads(listed.error.details_json) == {"after_s": 30}
    assert [m.message_json for m in listed.messages] == [
        json.dumps(_said(2), separators=(",", ":"))
    ]


def test_failed_runs_are_listed_newest_first_page_by_page(client: MnemoClient, user: str) -> None:
    for number in range(3):
        client.record_failed_run(user, "s1", run_id=f"run-{number}", error="boom")

    page = client.list_failed_runs_page(user, "s1", page_size=2)

    assert [run.run_id for run in client.list_failed_runs(user, "s1", page_size=1)] == [
        "run-2",
        "run-1",
        "run-0",
    ]
    assert [run.run_id for run in page.items] == ["run-2", "run-1"]


def test_compaction_replaces_a_prefix_and_a_stale_revision_conflicts(
    client: MnemoClient, user: str
) -> None:
    client.append_messages(user, "s1", [_said(n) for n in range(4)])
    revision, messages = client.snapshot_history(user, "s1")
    assert len(messages) == 4

    summary = {"role": "system", "content": "Summary of m0-m2."}
    compacted = client.replace_history_prefix(
        user, "s1", revision=revision, message_count=3, replacement=[summary]
    )

    assert [m.compacted for m in compacted.messages] == [True, False]
    assert compacted.revision != revision
    assert client.snapshot_history(user, "s1") == compacted
    with pytest.raises(RevisionStaleError) as raised:
        client.replace_history_prefix(
            user, "s1", revision=revision, message_count=1, replacement=[summary]
        )
    assert raised.value.reason == "REVISION_STALE"
    assert len(list(client.list_messages(user, "s1"))) == 4  # nothing canonical is lost


def test_a_malformed_message_is_invalid_with_its_field(client: MnemoClient, user: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        client.append_messages(user, "s1", [_said(0), {"role": "wizard", "content": "x"}])

    assert raised.value.reason == "INVALID_MESSAGE"
    assert [v.field for v in raised.value.field_violations] == ["messages[1].message_json"]


def test_errors_surface_from_iterators(client: MnemoClient, user: str) -> None:
    with pytest.raises(NotFoundError):
        list(client.list_messages(user, "missing"))
    with pytest.raises(NotFoundError):
        list(client.stream_messages(user, "missing"))


def test_messages_appended_after_the_fact_keep_when_they_were_said(
    client: MnemoClient, user: str
) -> None:
    then = datetime.datetime(2025, 5, 1, 12, 0, tzinfo=datetime.UTC)
    appended = client.append_messages(
        user, "imported", [_said(0), _said(1)], said_at=[then, None]
    ).messages
    assert appended[0].event_time.ToDatetime(datetime.UTC) == then
    assert appended[1].event_time == appended[1].create_time
    found = client.extract_memories(
        user, [{"role": "user", "content": "My name is Ada."}], said_at=[then]
    ).memories
    assert [m.event_time.ToDatetime(datetime.UTC) for m in found] == [then]
    with pytest.raises(ValueError):
        client.append_messages(user, "imported", [_said(2)], said_at=[])
