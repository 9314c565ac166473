"""WorkingMemoryService through a real server (goliath's working memory)."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import timestamp_pb2

from mnemo.v1 import working_memory_pb2 as wm
from mnemo.v1 import working_memory_pb2_grpc
from tests.support.rpc_errors import rpc_failure

Stub = working_memory_pb2_grpc.WorkingMemoryServiceStub
DEFAULT = "users/u1/memoryState"
WORK = "users/u1/conversations/work/memoryState"


def _exchange(i: int) -> wm.Exchange:
    return wm.Exchange(
        ask=f"question {i}",
        answer=f"answer {i}",
        at=timestamp_pb2.Timestamp(seconds=1_700_000_000 + i),
    )


def _remember(stub: Stub, name: str, i: int, **kwargs: Any) -> wm.RememberExchangeResponse:
    request = wm.RememberExchangeRequest(name=name, exchange=_exchange(i), **kwargs)
    response: wm.RememberExchangeResponse = stub.RememberExchange(request)
    return response


def _get(stub: Stub, name: str) -> wm.MemoryState:
    state: wm.MemoryState = stub.GetMemoryState(wm.GetMemoryStateRequest(name=name)).memory_state
    return state


def test_never_written_state_is_empty(working_memory: Stub) -> None:
    state = _get(working_memory, DEFAULT)
    assert state.name == DEFAULT
    assert (state.summary, list(state.recent), state.etag) == ("", [], "")


def test_remembering_five_keeps_the_last_three_and_returns_the_two_that_fell_off(
    working_memory: Stub,
) -> None:
    evicted: list[wm.Exchange] = []
    for i in range(1, 6):
        evicted.extend(_remember(working_memory, DEFAULT, i).evicted)
    state = _get(working_memory, DEFAULT)
    assert list(state.recent) == [_exchange(3), _exchange(4), _exchange(5)]
    assert evicted == [_exchange(1), _exchange(2)]


def test_keep_recent_override_and_default(working_memory: Stub) -> None:
    for i in range(1, 5):
        _remember(working_memory, WORK, i)
    response = _remember(working_memory, WORK, 5, keep_recent=1)
    assert list(response.memory_state.recent) == [_exchange(5)]
    assert list(response.evicted) == [_exchange(2), _exchange(3), _exchange(4)]
    response = _remember(working_memory, WORK, 6, keep_recent=0)
    assert list(response.memory_state.recent) == [_exchange(5), _exchange(6)]
    assert list(response.evicted) == []


def test_default_conversation_is_distinct_from_named_ones(working_memory: Stub) -> None:
    _remember(working_memory, DEFAULT, 1)
    _remember(working_memory, WORK, 2)
    _remember(working_memory, "users/u2/memoryState", 3)
    assert list(_get(working_memory, DEFAULT).recent) == [_exchange(1)]
    assert list(_get(working_memory, WORK).recent) == [_exchange(2)]
    assert list(_get(working_memory, "users/u2/memoryState").recent) == [_exchange(3)]
    assert list(_get(working_memory, "users/u1/conversations/other/memoryState").recent) == []


def test_a_second_client_reads_exactly_what_the_first_wrote(server: str) -> None:
    with grpc.insecure_channel(server) as phone_channel:
        phone = Stub(phone_channel)
        for i in range(1, 5):
            _remember(phone, WORK, i, summary=f"summary after {i}")
        written = _get(phone, WORK)
    with grpc.insecure_channel(server) as cloud_channel:
        assert _get(Stub(cloud_channel), WORK) == written
    assert written.summary == "summary after 4"
    assert [e.ask for e in written.recent] == ["question 2", "question 3", "question 4"]


def test_save_replaces_the_state_and_a_stale_etag_is_aborted(working_memory: Stub) -> None:
    first = working_memory.SaveMemoryState(
        wm.SaveMemoryStateRequest(
            memory_state=wm.MemoryState(name=WORK, summary="Plan: ship v1.", recent=[_exchange(1)])
        )
    ).memory_state
    assert first.etag and first.summary == "Plan: ship v1." and first.HasField("update_time")
    second = working_memory.SaveMemoryState(
        wm.SaveMemoryStateRequest(
            memory_state=wm.MemoryState(name=WORK, summary="Plan: ship v2.", etag=first.etag)
        )
    ).memory_state
    assert second.etag != first.etag and list(second.recent) == []

    stale = wm.MemoryState(name=WORK, summary="lost update", etag=first.etag)
    failure = rpc_failure(
        working_memory.SaveMemoryState, wm.SaveMemoryStateRequest(memory_state=stale)
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    assert failure.metadata["name"] == WORK
    failure = rpc_failure(
        working_memory.RememberExchange,
        wm.RememberExchangeRequest(name=WORK, exchange=_exchange(9), etag=first.etag),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    failure = rpc_failure(
        working_memory.ClearMemoryState, wm.ClearMemoryStateRequest(name=WORK, etag=first.etag)
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    assert _get(working_memory, WORK) == second


def test_summary_over_budget_is_refused_with_a_field_violation(working_memory: Stub) -> None:
    too_long = " ".join(f"w{i}" for i in range(61))
    failure = rpc_failure(
        working_memory.SaveMemoryState,
        wm.SaveMemoryStateRequest(memory_state=wm.MemoryState(name=WORK, summary=too_long)),
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "SUMMARY_OVER_BUDGET",
    )
    assert failure.fields == ("memory_state.summary",)
    assert failure.metadata == {"max_words": "60", "words": "61"}
    failure = rpc_failure(
        working_memory.RememberExchange,
        wm.RememberExchangeRequest(name=WORK, exchange=_exchange(1), summary=too_long),
    )
    assert failure.reason == "SUMMARY_OVER_BUDGET" and failure.fields == ("summary",)
    assert _get(working_memory, WORK).etag == ""  # nothing was written
    at_budget = " ".join(f"w{i}" for i in range(60))
    assert _remember(working_memory, WORK, 1, summary=at_budget).memory_state.summary == at_budget


def test_remember_can_carry_the_scribes_summary(working_memory: Stub) -> None:
    _remember(working_memory, WORK, 1, summary="first")
    state = _remember(working_memory, WORK, 2).memory_state
    assert state.summary == "first"  # unchanged when not sent
    state = _remember(working_memory, WORK, 3, summary="").memory_state
    assert state.summary == ""  # an empty summary is a summary


def test_server_stamps_the_time_of_an_exchange_without_one(working_memory: Stub) -> None:
    request = wm.RememberExchangeRequest(name=WORK, exchange=wm.Exchange(ask="now?"))
    state = working_memory.RememberExchange(request).memory_state
    assert state.recent[0].at.seconds > 1_700_000_000


def test_remember_with_a_request_id_is_idempotent(working_memory: Stub) -> None:
    first = _remember(working_memory, WORK, 1, request_id="r-1")
    retry = _remember(working_memory, WORK, 1, request_id="r-1")
    assert retry == first
    assert len(_get(working_memory, WORK).recent) == 1
    failure = rpc_failure(
        working_memory.RememberExchange,
        wm.RememberExchangeRequest(name=WORK, exchange=_exchange(2), request_id="r-1"),
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "REQUEST_ID_REUSED",
    )
    assert len(_get(working_memory, WORK).recent) == 1


def test_clear_empties_the_state(working_memory: Stub) -> None:
    before = _remember(working_memory, WORK, 1, summary="s").memory_state
    cleared = working_memory.ClearMemoryState(
        wm.ClearMemoryStateRequest(name=WORK, etag=before.etag)
    ).memory_state
    assert (cleared.summary, list(cleared.recent)) == ("", [])
    assert cleared.etag and cleared.etag != before.etag
    assert _get(working_memory, WORK) == cleared
