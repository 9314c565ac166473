"""The purge of expired temporary conversations: a loop the server runs
until it shuts down (``MnemoServer`` starts it; ``--purge-interval-seconds``).

Until the purge gets to it, an expired conversation is already treated as
gone by every read (``store.sql_temporary``); the purge frees the rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from mnemo_server.store.interfaces import GovernanceStore

PURGE_BATCH = 500
"""Conversations deleted per transaction."""

log = logging.getLogger(__name__)


async def purge_once(store: GovernanceStore, *, batch: int = PURGE_BATCH) -> int:
    """Delete every conversation expired by now, ``batch`` per transaction;
    how many."""
    total = 0
    while True:
        purged = await store.purge_expired_conversations(limit=batch)
        total += purged
        if purged < batch:
            return total


async def purge_until_stopped(
    store: GovernanceStore, interval_seconds: float, stopping: asyncio.Event
) -> None:
    """``purge_once`` every ``interval_seconds`` until ``stopping`` is set. A
    failed round is logged and retried at the next one: the loop never dies
    while the server runs."""
    while not stopping.is_set():
        try:
            purged = await purge_once(store)
        except Exception:  # the next round retries; the server must keep serving
            log.warning("purging expired temporary conversations failed", exc_info=True)
        else:
            if purged:
                log.info("purged %d expired temporary conversation(s)", purged)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), interval_seconds)
