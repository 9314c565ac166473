"""Resource names: parsing, formatting, and the INVALID_NAME error."""

from __future__ import annotations

import pytest

from mnemo_server.api import names
from mnemo_server.domain.errors import InvalidArgument
from mnemo_server.domain.models import ConversationKey


def test_user_round_trip() -> None:
    assert names.parse_user("users/u-1", "parent", None) == "u-1"
    assert names.user_name("u-1") == "users/u-1"


def test_conversation_round_trip() -> None:
    key = names.parse_conversation("users/u1/conversations/thread_123:x~y.z", "conversation", None)
    assert key == ConversationKey("u1", "thread_123:x~y.z")
    assert names.conversation_name(key) == "users/u1/conversations/thread_123:x~y.z"


def test_default_and_named_memory_state_are_distinct() -> None:
    default = names.parse_memory_state("users/u1/memoryState", "name", None)
    named = names.parse_memory_state("users/u1/conversations/work/memoryState", "name", None)
    assert default.is_default and default.user_id == "u1"
    assert named == ConversationKey("u1", "work") and not named.is_default
    assert names.memory_state_name(default) == "users/u1/memoryState"
    assert names.memory_state_name(named) == "users/u1/conversations/work/memoryState"


def test_child_names() -> None:
    key = ConversationKey("u1", "c1")
    assert names.message_name(key, 7) == "users/u1/conversations/c1/messages/7"
    assert names.failed_run_name(key, "f1") == "users/u1/conversations/c1/failedRuns/f1"


@pytest.mark.parametrize(
    "value",
    [
        "",
        "users/",
        "users/u1/",
        "user/u1",
        "users/-u1",
        "users/u 1",
        "users/u1/conversations",
        "users/u1/conversations/",
        "users/u1/conversations/c1/extra",
        "users/" + "a" * 129,
        "users/u1/conversations/é",
        " users/u1",
    ],
)
def test_malformed_conversation_names(value: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        names.parse_conversation(value, "conversation", None)
    error = caught.value
    assert error.reason == "INVALID_NAME"
    assert error.metadata == {"field": "conversation"}
    assert [v.field for v in error.violations] == ["conversation"]


def test_longest_id_is_accepted() -> None:
    assert names.parse_user("users/" + "a" * 128, "parent", None) == "a" * 128


@pytest.mark.parametrize(
    "value", ["users/u1/conversations/memoryState", "users/u1/memorystate", "users/u1"]
)
def test_malformed_memory_state_names(value: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        names.parse_memory_state(value, "name", None)
    assert caught.value.reason == "INVALID_NAME"


def test_message_names_the_problem_and_truncates_long_values() -> None:
    with pytest.raises(InvalidArgument) as caught:
        names.parse_user("x" * 1000, "parent", None)
    assert "parent" in caught.value.message
    assert len(caught.value.message) < 300
    with pytest.raises(InvalidArgument) as empty:
        names.parse_user("", "parent", None)
    assert "required" in empty.value.message
