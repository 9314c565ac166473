"""A noisy neighbour does not take what another user needs, checked by counts
(the latencies are measured by ``make bench-neighbour``):

- a user flooding at ten times its burst is refused before any database work:
  its refused calls run no SQL statement (``tests.support.statement_log``),
  while another user's calls, in parallel, all succeed;
- a user holding its most change watches (``--watch-max-watchers-per-user``)
  is refused one more, while another user still opens one.

The bucket refills at 0.01 requests per second, so within the test no token
comes back: the counts are exact without any timing assumption.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc, working_memory_pb2_grpc
from tests.api.changes import Watch
from tests.support.bearer_calls import get_states
from tests.support.rpc_errors import error_details
from tests.support.server import running_server
from tests.support.statement_log import StatementLog
from tests.support.tokens import SigningKeys, bearer

BURST = 5
FLOOD = 10 * BURST


def _create(stub: memories_pb2_grpc.MemoryServiceStub, user: str, token: str, n: int) -> object:
    """A ``CreateMemory`` (a write: the lane a refusal must not take); its status or error."""
    try:
        stub.CreateMemory(
            mm.CreateMemoryRequest(
                parent=f"users/{user}", memory=mm.Memory(text=f"note {n}"), request_id=f"r{n}"
            ),
            metadata=bearer(token),
            timeout=10,
        )
    except grpc.RpcError as error:
        return error
    return grpc.StatusCode.OK


@pytest.fixture
def log() -> Iterator[StatementLog]:
    with StatementLog() as installed:
        yield installed


def test_a_flood_is_refused_without_database_work_while_another_user_is_served(
    log: StatementLog, database_url: str, tmp_path: Path
) -> None:
    keys = SigningKeys.hs256()
    settings = keys.server_settings(
        tmp_path,
        rate_limit_per_second=0.01,
        rate_limit_burst=BURST,
        purge_interval_seconds=3600,  # no maintenance statements during the count
        read_connections=1,  # no first use of a second connection among the counted calls
    )
    with running_server(database_url, **settings) as target, grpc.insecure_channel(target) as ch:
        memories = memories_pb2_grpc.MemoryServiceStub(ch)
        states = working_memory_pb2_grpc.WorkingMemoryServiceStub(ch)
        alice = keys.token("alice")
        assert [_create(memories, "alice", alice, n) for n in range(BURST)] == [
            grpc.StatusCode.OK
        ] * BURST
        # What bob's reads cost alone, measured on carol (same calls, same shape).
        with log.counting() as alone:
            assert (
                get_states(states, "carol", keys.token("carol"), BURST)
                == [grpc.StatusCode.OK] * BURST
            )

        flooded: list[object] = []
        with log.counting() as during:
            flooder = threading.Thread(
                target=lambda: flooded.extend(
                    _create(memories, "alice", alice, n) for n in range(BURST, BURST + FLOOD)
                )
            )
            flooder.start()
            served = get_states(states, "bob", keys.token("bob"), BURST)
            flooder.join(60)
        with log.counting() as flood_alone:
            refused_again = _create(memories, "alice", alice, BURST + FLOOD)

    assert served == [grpc.StatusCode.OK] * BURST
    assert len(flooded) == FLOOD
    for refusal in flooded:
        assert isinstance(refusal, grpc.RpcError)
        assert error_details(refusal).reason == "RATE_LIMITED"
    assert len(alone) > 0
    assert len(during) == len(alone), "the refused calls ran SQL statements"
    assert isinstance(refused_again, grpc.RpcError)
    assert flood_alone == []


def test_a_user_at_its_most_watches_is_refused_while_another_user_still_watches(
    database_url: str,
) -> None:
    with running_server(database_url, watch_max_watchers_per_user=2) as target:
        watches = [Watch(target, user="alice"), Watch(target, user="alice")]
        try:
            for watch in watches:
                assert watch.next_event().HasField("heartbeat")
            third = Watch(target, user="alice")
            failure = third.next()
            third.close()
            assert isinstance(failure, grpc.RpcError)
            assert error_details(failure).reason == "RATE_LIMITED"
            assert "this user" in (failure.details() or "")
            watches.append(Watch(target, user="bob"))
            assert watches[-1].next_event().HasField("heartbeat")
        finally:
            for watch in watches:
                watch.close()
