"""The lanes' queue at shutdown (``store.engine.lanes.OpQueue``): a lane
waiting in ``take`` stops once the queue is closed, whatever it held: the
intermittent hang of ``Database.close`` was a lane waiting forever after
the queue, closed, held only an operation its caller had abandoned."""

from __future__ import annotations

import threading

from mnemo_server.store.engine.lanes import BatchLimits, Op, OpQueue

BOUND_S = 10.0


def _take_in_thread(queue: OpQueue) -> tuple[threading.Thread, list[object]]:
    taken: list[object] = []
    thread = threading.Thread(
        target=lambda: taken.append(queue.take(BatchLimits(), reads=False)), daemon=True
    )
    thread.start()
    return thread, taken


def test_closing_a_queue_holding_only_an_abandoned_op_stops_the_lane() -> None:
    queue = OpQueue()
    op: Op[None] = Op(work=lambda tx: None, loop=None, future=None)
    queue.put(op, wake=False)
    assert queue.abandon(op)
    queue.close()
    thread, taken = _take_in_thread(queue)
    thread.join(BOUND_S)
    assert not thread.is_alive(), "take() still waits on a closed queue"
    assert taken == [None]


def test_a_lane_waiting_on_an_empty_queue_stops_when_it_closes() -> None:
    queue = OpQueue()
    thread, taken = _take_in_thread(queue)
    queue.close()
    thread.join(BOUND_S)
    assert not thread.is_alive() and taken == [None]


def test_closing_after_an_abandoned_op_wakes_a_waiting_lane() -> None:
    queue = OpQueue()
    op: Op[None] = Op(work=lambda tx: None, loop=None, future=None, not_before=1e18)
    queue.put(op)
    thread, taken = _take_in_thread(queue)
    assert queue.abandon(op)
    queue.close()
    thread.join(BOUND_S)
    assert not thread.is_alive() and taken == [None]
