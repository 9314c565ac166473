"""The domain JSON codec: every stored result type round-trips exactly."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from mnemo_server.domain import codec
from mnemo_server.domain.codec import CodecError
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    Exchange,
    FailedRun,
    HistorySnapshot,
    MemoryState,
    NewMessage,
    RememberResult,
    RunError,
    StoredMessage,
)

T0 = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
IST = timezone(timedelta(hours=5, minutes=30))


def stored(position: int) -> StoredMessage:
    return StoredMessage(
        position=position,
        run_id="run",
        turn=2,
        create_time=T0,
        role="assistant",
        message_json='{"role":"assistant",  "content":"é \\u00e9"}',
        text="é é",
        compacted=position < 0,
    )


CONVERSATION = Conversation(
    user_id="alice",
    conversation_id="c1",
    metadata={"nested": {"list": [1, 2.5, None, True, "x"]}, "unicode": "ß"},
    temporary=True,
    create_time=T0,
    update_time=T0 + timedelta(microseconds=1),
    message_count=3,
    etag="abc",
    expire_time=None,
)

VALUES: list[Any] = [
    RememberResult(
        state=MemoryState(
            summary="brief",
            recent=(Exchange("a", "b", T0), Exchange("c", "d", T0.astimezone(IST))),
            etag="e1",
            update_time=T0,
        ),
        evicted=(Exchange("x", "y", T0),),
    ),
    RememberResult(state=MemoryState(), evicted=()),
    AppendResult(conversation=CONVERSATION, messages=(stored(0), stored(1))),
    FailedRun(
        failed_run_id="f1",
        run_id="r",
        error=RunError(message="boom", code="E", details_json='{"a": 1}'),
        messages=(stored(0),),
        create_time=T0,
    ),
    HistorySnapshot(revision="rev", messages=(stored(-1), stored(4))),
    CONVERSATION,
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_domain_results_round_trip(value: Any) -> None:
    text = codec.dumps(value)
    json.loads(text)  # plain JSON
    assert codec.loads(type(value), text) == value


def test_datetimes_keep_the_instant_to_the_microsecond_and_come_back_in_utc() -> None:
    local = datetime(2026, 1, 1, 23, 59, 59, 999999, tzinfo=IST)
    (decoded,) = codec.loads(tuple[Exchange, ...], codec.dumps((Exchange("a", "b", local),)))
    assert decoded.at == local
    assert decoded.at.tzinfo == UTC


def test_tuples_of_dataclasses_round_trip() -> None:
    items = (NewMessage("{}", "user", "hi"), NewMessage('{"x":1}', "tool", ""))
    assert codec.loads(tuple[NewMessage, ...], codec.dumps(items)) == items


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(CodecError):
        codec.dumps(Exchange("a", "b", datetime(2026, 1, 1)))


@pytest.mark.parametrize(
    ("tp", "text"),
    [
        (int, '"1"'),
        (int, "true"),
        (str, "1"),
        (bool, "0"),
        (datetime, '"yesterday"'),
        (datetime, '"2026-01-01T00:00:00"'),
        (tuple[int, ...], '{"a": 1}'),
        (tuple[int, str], "[1]"),
        (dict[str, int], '{"a": "b"}'),
        (Exchange, "[]"),
        (Exchange, '{"ask": "a"}'),
        (MemoryState, "not json"),
        (int | None, '"x"'),
    ],
)
def test_mismatches_raise_codec_error(tp: Any, text: str) -> None:
    with pytest.raises(CodecError):
        codec.loads(tp, text)


def test_unknown_keys_are_ignored_and_missing_ones_take_defaults() -> None:
    decoded = codec.loads(MemoryState, '{"summary": "s", "from_the_future": 1}')
    assert decoded == MemoryState(summary="s")


@dataclass(frozen=True)
class Mixed:
    pair: tuple[int, str]
    maybe: float | None
    anything: Any
    items: list[int]


def test_fixed_tuples_optionals_any_and_lists() -> None:
    value = Mixed(pair=(1, "a"), maybe=None, anything={"k": [1, "x"]}, items=[3, 4])
    assert codec.loads(Mixed, codec.dumps(value)) == value
    assert codec.loads(Mixed, '{"pair":[1,"a"],"maybe":2,"anything":null,"items":[]}').maybe == 2.0


def test_unencodable_values_are_refused() -> None:
    with pytest.raises(CodecError):
        codec.dumps({1: "int key"})
    with pytest.raises(CodecError):
        codec.dumps(object())
    with pytest.raises(ValueError):
        codec.dumps(float("nan"))
