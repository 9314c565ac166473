"""Working memory through a real server, with the blocking and the asyncio client."""

from __future__ import annotations

import datetime

import grpc
import pytest

from mnemo.client import (
    AbortedError,
    EtagMismatchError,
    Exchange,
    InvalidArgumentError,
    MnemoClient,
)


def test_a_state_never_written_reads_empty(client: MnemoClient, user: str) -> None:
    state = client.get_memory_state(user)

    assert state.name == f"users/{user}/memoryState"
    assert (state.summary, list(state.recent), state.etag) == ("", [], "")


def test_another_client_reads_exactly_what_one_saved(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    at = datetime.datetime(2025, 5, 1, 12, 30, tzinfo=datetime.UTC)
    saved = client.save_memory_state(
        user,
        "c1",
        summary="Talked about cars.",
        recent=[Exchange(ask="Where is my car?", answer="Level 3.", at=at), {"ask": "Thanks"}],
    )

    read = other_client.get_memory_state(user, "c1")
    assert read == saved
    assert read.etag
    assert read.recent[0].at.ToDatetime(datetime.UTC) == at
    assert other_client.get_memory_state(user).etag == ""  # the default conversation is apart


def test_remembering_five_exchanges_keeps_three_and_returns_the_rest(
    client: MnemoClient, user: str
) -> None:
    evicted: list[str] = []
    for number in range(5):
        state, fell_off = client.remember_exchange(user, ask=f"q{number}", answer=f"a{number}")
        evicted += [exchange.ask for exchange in fell_off]

    assert [exchange.ask for exchange in state.recent] == ["q2", "q3", "q4"]
    assert evicted == ["q0", "q1"]


def test_remember_can_carry_the_new_summary_and_window(client: MnemoClient, user: str) -> None:
    client.remember_exchange(user, "c1", ask="q0", answer="a0")
    remembered = client.remember_exchange(
        user, "c1", ask="q1", answer="a1", keep_recent=1, summary="Asked q0."
    )

    assert remembered.state.summary == "Asked q0."
    assert [e.ask for e in remembered.state.recent] == ["q1"]
    assert [e.ask for e in remembered.evicted] == ["q0"]


def test_a_repeated_request_id_remembers_once(client: MnemoClient, user: str) -> None:
    first = client.remember_exchange(user, ask="q", answer="a", request_id="r-1")
    again = client.remember_exchange(user, ask="q", answer="a", request_id="r-1")

    assert again == first
    assert len(client.get_memory_state(user).recent) == 1


def test_a_stale_etag_is_an_etag_mismatch(client: MnemoClient, user: str) -> None:
    first = client.save_memory_state(user, summary="one", recent=[])
    client.save_memory_state(user, summary="two", recent=[], etag=first.etag)

    with pytest.raises(EtagMismatchError) as raised:
        client.clear_memory_state(user, etag=first.etag)

    error = raised.value
    assert isinstance(error, AbortedError)
    assert (error.code, error.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    assert error.metadata["name"] == f"users/{user}/memoryState"
    assert client.get_memory_state(user).summary == "two"


def test_clear_empties_the_state(client: MnemoClient, user: str) -> None:
    saved = client.save_memory_state(user, summary="s", recent=[{"ask": "q"}])

    cleared = client.clear_memory_state(user, etag=saved.etag)

    assert (cleared.summary, list(cleared.recent)) == ("", [])
    assert cleared.etag not in ("", saved.etag)


def test_a_summary_over_budget_names_the_field(client: MnemoClient, user: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        client.save_memory_state(user, summary="word " * 61, recent=[])

    error = raised.value
    assert error.reason == "SUMMARY_OVER_BUDGET"
    assert [v.field for v in error.field_violations] == ["memory_state.summary"]


def test_invalid_input_lists_every_violation(client: MnemoClient) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        client.remember_exchange("not an id!", ask="", answer="a")

    error = raised.value
    assert error.code is grpc.StatusCode.INVALID_ARGUMENT
    assert error.reason
    fields = {violation.field for violation in error.field_violations}
    assert {"name", "exchange.ask"} <= fields
    assert all(violation.description for violation in error.field_violations)
