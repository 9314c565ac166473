"""Working memory under many concurrent clients, through a real server, on
both backends: concurrent RememberExchange calls on one state lose no
exchange (what fell off plus what stays account for every one, in one
order), and concurrent etag saves let exactly one writer win per version."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager

import grpc

from mnemo.v1 import working_memory_pb2 as wm
from mnemo.v1 import working_memory_pb2_grpc
from tests.support.rpc_errors import error_details

Stub = working_memory_pb2_grpc.WorkingMemoryServiceStub
STATE = "users/u1/conversations/busy/memoryState"
CLIENTS = 8
REMEMBERS_PER_CLIENT = 25
WRITERS = 6
ROUNDS = 20
WAIT_S = 60


@contextmanager
def _stubs(target: str, count: int) -> Iterator[list[Stub]]:
    """One channel (one connection) per client."""
    with ExitStack() as stack:
        channels = [stack.enter_context(grpc.insecure_channel(target)) for _ in range(count)]
        yield [Stub(channel) for channel in channels]


def _ask(client: int, n: int) -> str:
    return f"client {client} exchange {n}"


def _remember_all(stub: Stub, client: int) -> list[wm.RememberExchangeResponse]:
    return [
        stub.RememberExchange(
            wm.RememberExchangeRequest(
                name=STATE, exchange=wm.Exchange(ask=_ask(client, n), answer="ok")
            ),
            timeout=WAIT_S,
        )
        for n in range(REMEMBERS_PER_CLIENT)
    ]


def test_concurrent_remembers_lose_no_exchange(server: str) -> None:
    with _stubs(server, CLIENTS) as stubs, ThreadPoolExecutor(CLIENTS) as pool:
        per_client = list(pool.map(_remember_all, stubs, range(CLIENTS)))
        final = stubs[0].GetMemoryState(wm.GetMemoryStateRequest(name=STATE)).memory_state
    responses = [response for own in per_client for response in own]
    everyone = {_ask(c, n) for c in range(CLIENTS) for n in range(REMEMBERS_PER_CLIENT)}

    # Every exchange fell off exactly once or is still recent.
    accounted = Counter(e.ask for r in responses for e in r.evicted)
    accounted.update(e.ask for e in final.recent)
    assert set(accounted) == everyone
    assert set(accounted.values()) == {1}, accounted.most_common(3)

    # Each response shows a window of one total order of the appends: the
    # successors it shows never contradict another's.
    successor: dict[str, str] = {}
    for response in responses:
        window = [e.ask for e in response.memory_state.recent]
        for before, after in zip(window, window[1:], strict=False):
            assert successor.setdefault(before, after) == after, (before, after)
    order = [next(iter(everyone - set(successor.values())))]
    while order[-1] in successor:
        order.append(successor[order[-1]])
    assert sorted(order) == sorted(everyone)
    position = {ask: i for i, ask in enumerate(order)}
    for client, own in enumerate(per_client):
        # A client's own exchanges in the order it sent them; each response
        # ends with its own exchange and evicts the one just before its window.
        asks = [_ask(client, n) for n in range(REMEMBERS_PER_CLIENT)]
        assert [position[a] for a in asks] == sorted(position[a] for a in asks)
        for ask, response in zip(asks, own, strict=True):
            window = [e.ask for e in response.memory_state.recent]
            assert window[-1] == ask
            first = position[window[0]]
            evicted = [e.ask for e in response.evicted]
            assert evicted == order[first - len(evicted) : first]
    assert [e.ask for e in final.recent] == order[-len(final.recent) :]


def _save(stub: Stub, writer: int, round_: int, etag: str) -> str:
    """``"OK"`` or the refusal's reason."""
    state = wm.MemoryState(name=STATE, summary=f"round {round_} by {writer}", etag=etag)
    try:
        stub.SaveMemoryState(wm.SaveMemoryStateRequest(memory_state=state), timeout=WAIT_S)
    except grpc.RpcError as error:
        details = error_details(error)
        return f"{details.code.name} {details.reason}"
    return "OK"


def test_concurrent_etag_saves_let_exactly_one_writer_win_per_version(server: str) -> None:
    with _stubs(server, WRITERS) as stubs, ThreadPoolExecutor(WRITERS) as pool:
        first = stubs[0].SaveMemoryState(
            wm.SaveMemoryStateRequest(memory_state=wm.MemoryState(name=STATE, summary="start"))
        )
        etag = first.memory_state.etag
        start = threading.Barrier(WRITERS, timeout=WAIT_S)

        def save(writer: int, round_: int, etag: str) -> str:
            start.wait()  # all writers send the same etag at once
            return _save(stubs[writer], writer, round_, etag)

        for round_ in range(ROUNDS):
            outcomes = list(pool.map(save, range(WRITERS), [round_] * WRITERS, [etag] * WRITERS))
            assert sorted(outcomes) == ["ABORTED ETAG_MISMATCH"] * (WRITERS - 1) + ["OK"], (
                round_,
                outcomes,
            )
            state = stubs[0].GetMemoryState(wm.GetMemoryStateRequest(name=STATE)).memory_state
            assert state.summary == f"round {round_} by {outcomes.index('OK')}"
            assert state.etag != etag
            etag = state.etag
