"""Bounded waits at shutdown: a thread or task that does not stop in time
becomes an error that shows where it is stuck, never a hang.

``make test`` once hung in ``Database.close`` joining a write lane that
waited forever (``store.engine.lanes.OpQueue.take``); with these bounds such
a hang surfaces as ``ShutdownHang`` carrying the stuck code's stack.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback

SHUTDOWN_BOUND_S = 120.0
"""How long a shutdown waits for one thread or task (queued writes drain
first: a large import may take a while, far less than this)."""


class ShutdownHang(RuntimeError):
    """A thread or task did not stop within its bound; the message holds its stack."""


def _thread_stack(thread: threading.Thread) -> str:
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return "  (no stack: the thread is not running Python code)\n"
    return "".join(traceback.format_stack(frame))


async def join_thread(
    thread: threading.Thread, what: str, bound_s: float = SHUTDOWN_BOUND_S
) -> None:
    """Join ``thread`` for at most ``bound_s`` seconds. Raises ``ShutdownHang``
    (naming ``what``, with the thread's stack) when it is still alive."""
    await asyncio.to_thread(thread.join, bound_s)
    if thread.is_alive():
        raise ShutdownHang(
            f"{what} ({thread.name}) did not stop within {bound_s:g} s; it is at:\n"
            + _thread_stack(thread)
        )


async def wait_task(
    task: asyncio.Task[object], what: str, bound_s: float = SHUTDOWN_BOUND_S
) -> None:
    """Wait for ``task`` to end for at most ``bound_s`` seconds (its own
    exception propagates). Raises ``ShutdownHang`` (naming ``what``, with
    the task's stack) when it has not, after cancelling it."""
    done, _ = await asyncio.wait({task}, timeout=bound_s)
    if done:
        await task
        return
    stack = "".join(
        "".join(traceback.format_stack(frame, limit=8)) for frame in task.get_stack(limit=8)
    )
    task.cancel()
    raise ShutdownHang(f"{what} did not stop within {bound_s:g} s; it was at:\n{stack}")
