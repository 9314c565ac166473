"""The tail of the history through a real server: ``get_message`` and ``pop_messages``,
with the blocking and the asyncio client."""

from __future__ import annotations

import grpc
import pytest

from mnemo.client import (
    FailedPreconditionError,
    HistoryCompactedError,
    InvalidArgumentError,
    MnemoClient,
    NotFoundError,
    PositionMismatchError,
    RequestIdReusedError,
)
from mnemo.client import _history as history


def _said(number: int) -> dict[str, str]:
    return {"role": "user", "content": f"m{number}"}


def _texts(messages: object) -> list[str]:
    return [m.text for m in messages]  # type: ignore[attr-defined]


def test_get_message_reads_one_position(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    client.append_messages(user, "s1", [_said(0), _said(1)])

    got = other_client.get_message(user, "s1", 1)

    assert (got.position, got.text, got.role) == (1, "m1", "user")
    assert got.name == f"users/{user}/conversations/s1/messages/1"
    for position, conversation in ((2, "s1"), (0, "nope")):
        with pytest.raises(NotFoundError):
            client.get_message(user, conversation, position)
    with pytest.raises(InvalidArgumentError) as raised:
        client.get_message(user, "s1", -1)
    assert raised.value.reason == "INVALID_NAME"


def test_pop_returns_the_tail_oldest_first_and_positions_are_reused(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    client.append_messages(user, "s1", [_said(n) for n in range(4)])

    popped = client.pop_messages(user, "s1", 2)

    assert _texts(popped.messages) == ["m2", "m3"]
    assert popped.conversation.message_count == 2
    assert popped.change_cursor > 0
    assert _texts(other_client.list_messages(user, "s1")) == ["m0", "m1"]
    assert client.append_messages(user, "s1", [_said(9)]).messages[0].position == 2
    assert _texts(client.pop_messages(user, "s1").messages) == ["m9"]  # count defaults to 1


def test_pop_from_an_empty_history_removes_nothing(client: MnemoClient, user: str) -> None:
    client.create_conversation(user, "s1")

    popped = client.pop_messages(user, "s1", 3)

    assert list(popped.messages) == []
    assert (popped.conversation.message_count, popped.change_cursor) == (0, 0)
    with pytest.raises(NotFoundError):
        client.pop_messages(user, "nope")


def test_expected_next_position_guards_the_pop(client: MnemoClient, user: str) -> None:
    client.append_messages(user, "s1", [_said(n) for n in range(3)])

    with pytest.raises(PositionMismatchError) as raised:
        client.pop_messages(user, "s1", 1, expected_next_position=2)

    assert raised.value.code == grpc.StatusCode.ABORTED
    assert raised.value.metadata["next_position"] == "3"
    assert client.get_conversation(user, "s1").message_count == 3
    popped = client.pop_messages(user, "s1", 1, expected_next_position=3)
    assert _texts(popped.messages) == ["m2"]


def test_a_resent_pop_removes_once_and_answers_the_first_result(
    client: MnemoClient, user: str
) -> None:
    client.append_messages(user, "s1", [_said(n) for n in range(3)])

    first = client.pop_messages(user, "s1", 1, request_id="pop-1")
    again = client.pop_messages(user, "s1", 1, request_id="pop-1")

    assert _texts(again.messages) == _texts(first.messages) == ["m2"]
    assert again.change_cursor == first.change_cursor
    assert client.get_conversation(user, "s1").message_count == 2
    with pytest.raises(RequestIdReusedError):
        client.pop_messages(user, "s1", 2, request_id="pop-1")


def test_a_pop_into_a_compacted_prefix_raises_history_compacted(
    client: MnemoClient, user: str
) -> None:
    client.append_messages(user, "s1", [_said(n) for n in range(4)])
    snapshot = client.snapshot_history(user, "s1")
    client.replace_history_prefix(
        user,
        "s1",
        revision=snapshot.revision,
        message_count=3,
        replacement=[{"role": "system", "content": "summary"}],
    )

    with pytest.raises(HistoryCompactedError) as raised:
        client.pop_messages(user, "s1", 2)

    assert isinstance(raised.value, FailedPreconditionError)
    assert raised.value.metadata == {"compacted_messages": "3", "next_position": "4"}
    assert client.get_conversation(user, "s1").message_count == 4


def test_pop_requests_carry_a_fresh_request_id_and_an_unset_guard() -> None:
    first = history.pop_messages("u1", "c1").request
    second = history.pop_messages("u1", "c1", 2, expected_next_position=0).request

    assert first.request_id and second.request_id and first.request_id != second.request_id
    assert (first.count, first.HasField("expected_next_position")) == (1, False)
    assert (second.count, second.expected_next_position) == (2, 0)
    assert second.HasField("expected_next_position")
    assert history.pop_messages("u1", "c1", request_id="").request.request_id == ""
