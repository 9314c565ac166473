"""Edge validation: every problem of a request is reported at once; idempotency keys."""

from __future__ import annotations

import pytest

from mnemo.v1 import conversations_pb2
from mnemo_server.api import names
from mnemo_server.api.idempotency import fingerprint, idempotency_of
from mnemo_server.api.validation import (
    MAX_METADATA_BYTES,
    MAX_REPORTED_BYTES,
    MAX_REPORTED_VIOLATIONS,
    Validator,
)
from mnemo_server.domain.errors import AlreadyExists, FieldViolation, InvalidArgument
from mnemo_server.rpc.errors import to_status


def test_nothing_collected_raises_nothing() -> None:
    v = Validator()
    v.required("x", "a")
    v.identifier("r" * 128, "request_id")
    v.raise_if_invalid()


def test_all_problems_are_reported_with_the_first_reason() -> None:
    v = Validator()
    key = v.attempt(lambda: names.parse_conversation("bad", "conversation", None), None)
    v.identifier("r" * 129, "request_id")
    v.text("", "error.message", 10, required=True)
    v.text("a\x00b", "error.code", 10)
    v.non_negative(-1, "turn")
    assert key is None
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    error = caught.value
    assert error.reason == "INVALID_NAME"
    assert [v.field for v in error.violations] == [
        "conversation",
        "request_id",
        "error.message",
        "error.code",
        "turn",
    ]
    assert error.metadata["fields"] == "conversation,request_id,error.message,error.code,turn"
    assert "4 more problems" in error.message


def test_too_many_problems_list_the_first_ones_so_that_the_trailer_fits() -> None:
    """gRPC clients refuse a trailer over 16 KiB (the details of 200 violations
    were 18 KiB): at most 50 violations, 4,096 characters, are listed."""
    v = Validator()
    for index in range(1000):
        v.required("", f"requests[{index}].memory.text")
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    error = caught.value
    assert len(error.violations) == MAX_REPORTED_VIOLATIONS
    assert error.violations[0].field == "requests[0].memory.text"
    assert error.metadata["fields"].split(",")[-1] == "requests[49].memory.text"
    assert error.message.endswith("(and 999 more problems; the first 50 of 1000 are listed)")
    trailer = sum(len(key) + len(value) for key, value in to_status(error).trailing_metadata)
    assert trailer < 8192

    v = Validator()
    for index in range(10):
        v.required("", f"requests[{index}].{'x' * 1000}")
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    listed = caught.value.violations
    assert len(listed) == 4 and sum(len(x.field) + len(x.description) for x in listed) <= (
        MAX_REPORTED_BYTES
    )


def test_an_error_that_names_fields_carries_them_whatever_its_code() -> None:
    error = AlreadyExists(
        "taken", "ALREADY_EXISTS", violations=(FieldViolation("requests[2].memory_id", "taken"),)
    )
    assert len(to_status(error).trailing_metadata[0][1]) > len(
        to_status(AlreadyExists("taken", "ALREADY_EXISTS")).trailing_metadata[0][1]
    )


def test_sizes_are_field_too_large() -> None:
    v = Validator()
    v.max_bytes("é" * 6, "summary", 10)
    v.metadata({"k": "x" * MAX_METADATA_BYTES}, "metadata")
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    assert caught.value.reason == "FIELD_TOO_LARGE"
    assert caught.value.metadata["limit"] == "10"


def test_messages_are_checked_one_by_one() -> None:
    v = Validator()
    parsed = v.new_messages(
        ['{"role":"user","content":"hi"}', "nope", '{"role":"user","content":"' + "x" * 50 + '"}'],
        "messages",
        max_bytes=40,
        max_count=5,
    )
    assert [m.text for m in parsed] == ["hi"]
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    assert caught.value.reason == "INVALID_MESSAGE"
    assert [x.field for x in caught.value.violations] == [
        "messages[1].message_json",
        "messages[2].message_json",
    ]


def test_json_text() -> None:
    v = Validator()
    v.json_text("", "details_json", 100)
    v.json_text('{"a": [1, 2.5e3]}', "details_json", 100)
    v.raise_if_invalid()
    v.json_text("{nope", "details_json", 100)
    with pytest.raises(InvalidArgument):
        v.raise_if_invalid()


def test_fingerprint_ignores_only_the_request_id() -> None:
    def request(request_id: str, text: str) -> conversations_pb2.AppendMessagesRequest:
        return conversations_pb2.AppendMessagesRequest(
            conversation="users/u/conversations/c",
            messages=[conversations_pb2.HistoryMessage(message_json=text)],
            request_id=request_id,
        )

    assert fingerprint(request("a", "x")) == fingerprint(request("b", "x"))
    assert fingerprint(request("a", "x")) != fingerprint(request("a", "y"))
    key = idempotency_of(request("r1", "x"), "AppendMessages")
    assert key is not None
    assert (key.request_id, key.scope) == ("r1", "AppendMessages")
    assert idempotency_of(request("", "x"), "AppendMessages") is None
