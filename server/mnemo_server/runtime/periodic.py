"""What the server's background housekeeping loops share: deleting in
bounded batches until nothing is left, and running a round every interval
until the server stops, a failed round never ending the loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def drain(delete_batch: Callable[[int], Awaitable[int]], batch: int) -> int:
    """Call ``delete_batch(batch)`` (one transaction each) until it deletes
    fewer than ``batch``; how many in all."""
    total = 0
    while True:
        deleted = await delete_batch(batch)
        total += deleted
        if deleted < batch:
            return total


async def repeat_until_stopped(
    round_: Callable[[], Awaitable[str]],
    interval_seconds: float,
    stopping: asyncio.Event,
    what: str,
) -> None:
    """Run ``round_`` now and every ``interval_seconds`` until ``stopping`` is
    set. What a round returns, if not empty, is logged; a round that raises
    is logged (``what`` failed) and the next one tries again: the loop never
    dies while the server runs."""
    while not stopping.is_set():
        try:
            done = await round_()
        except Exception:  # the next round retries; the server must keep serving
            log.warning("%s failed", what, exc_info=True)
        else:
            if done:
                log.info("%s", done)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), interval_seconds)
