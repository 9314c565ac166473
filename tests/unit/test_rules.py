"""The request rules tables (``api/<service>/rules.py``) and their checker."""

from __future__ import annotations

import pytest

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import working_memory_pb2 as wm
from mnemo_server.api.conversations.rules import RULES as CONVERSATIONS
from mnemo_server.api.governance.rules import RULES as GOVERNANCE
from mnemo_server.api.memories.rules import RULES as MEMORIES
from mnemo_server.api.sync.rules import RULES as SYNC
from mnemo_server.api.user_data.rules import RECORD_RULES
from mnemo_server.api.validation import (
    FieldRule,
    Rules,
    Validator,
    check_fields,
    identifier,
    text,
)
from mnemo_server.api.working_memory.rules import RULES as WORKING_MEMORY
from mnemo_server.domain.errors import InvalidArgument

TABLES: dict[str, Rules] = {
    "conversations": CONVERSATIONS,
    "governance": GOVERNANCE,
    "memories": MEMORIES,
    "sync": SYNC,
    "user_data": RECORD_RULES,
    "working_memory": WORKING_MEMORY,
}


def _fields(request: object) -> list[str]:
    v = Validator()
    check_fields(v, request, CONVERSATIONS | WORKING_MEMORY)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    return [violation.field for violation in caught.value.violations]


def test_every_rule_names_a_field_of_its_message() -> None:
    """A path that does not exist would fail only on the first request that
    reaches it: every step must be a field, ``[]`` only on a repeated one."""
    for table, rules in TABLES.items():
        for message, field_rules in rules.items():
            for rule in field_rules:
                descriptor = message.DESCRIPTOR
                steps = rule.path.split(".")
                for depth, step in enumerate(steps):
                    name = step.removesuffix("[]")
                    field = descriptor.fields_by_name.get(name)
                    where = f"{table}: {message.__name__}.{rule.path}"
                    assert field is not None, where
                    repeated = field.is_repeated
                    assert repeated == step.endswith("[]"), where
                    if depth < len(steps) - 1:
                        assert field.message_type is not None, where
                        descriptor = field.message_type
                    elif rule.when_set:
                        assert field.has_presence, where


def test_the_table_reports_every_problem_in_table_order() -> None:
    request = cv.RecordFailedRunRequest(
        run_id="", error=cv.RunError(message="", code="x\x00"), request_id="r" * 129
    )
    assert _fields(request) == ["run_id", "error.message", "error.code", "request_id"]


def test_repeated_paths_name_each_element() -> None:
    request = wm.SaveMemoryStateRequest(
        memory_state=wm.MemoryState(
            recent=[wm.Exchange(ask="fine"), wm.Exchange(ask=""), wm.Exchange(ask="a\x00")]
        )
    )
    assert _fields(request) == ["memory_state.recent[1].ask", "memory_state.recent[2].ask"]


def test_when_set_rules_skip_an_absent_field() -> None:
    v = Validator()
    check_fields(v, cv.AppendMessagesRequest(), CONVERSATIONS)
    v.raise_if_invalid()  # no expected_position: its range is not checked
    assert _fields(cv.AppendMessagesRequest(expected_position=-1)) == ["expected_position"]


def test_a_prefix_places_a_record_in_its_stream() -> None:
    v = Validator()
    rules = {cv.HistoryMessage: (FieldRule("run_id", identifier()),)}
    check_fields(v, cv.HistoryMessage(run_id="x" * 200), rules, "records[7].message")
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    assert [x.field for x in caught.value.violations] == ["records[7].message.run_id"]


def test_a_valid_request_raises_nothing_and_reasons_are_kept() -> None:
    v = Validator()
    rules = {cv.RunError: (FieldRule("message", text(4)),)}
    check_fields(v, cv.RunError(message="four"), rules)
    v.raise_if_invalid()
    check_fields(v, cv.RunError(message="fives"), rules)
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    assert caught.value.reason == "FIELD_TOO_LARGE"
    assert caught.value.metadata == {"field": "message", "limit": "4"}
