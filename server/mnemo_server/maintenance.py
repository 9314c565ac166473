"""The server's maintenance task: idempotency records past their window and
changes past their retention are deleted, in bounded batches, every
``--purge-interval-seconds`` until the server stops (``MnemoServer`` starts
it next to the purge of temporary conversations).

Until a record is pruned it is already ignored once older than the window
(``store.idempotency``); pruning only frees the rows. A change pruned is gone
for good: a cursor before it gets ``CURSOR_EXPIRED`` (``store.sql_changes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Protocol

from mnemo_server.store.convert import now_micros

__all__ = ["PRUNE_BATCH", "Pruned", "Retention", "prune_once", "prune_until_stopped"]

PRUNE_BATCH = 1000
"""Rows deleted per transaction."""

log = logging.getLogger(__name__)


class PrunableStore(Protocol):
    async def prune_changes(self, *, older_than_micros: int, limit: int) -> int: ...

    async def prune_idempotency_records(self, *, older_than_micros: int, limit: int) -> int: ...


@dataclass(frozen=True)
class Retention:
    """How long idempotency records and changes are kept, in seconds."""

    idempotency_window_seconds: float
    change_retention_seconds: float


@dataclass(frozen=True)
class Pruned:
    """How many rows one round deleted."""

    idempotency_records: int
    changes: int


async def _drain(prune: PruneBatch, older_than_micros: int, batch: int) -> int:
    total = 0
    while True:
        deleted = await prune(older_than_micros=older_than_micros, limit=batch)
        total += deleted
        if deleted < batch:
            return total


class PruneBatch(Protocol):
    async def __call__(self, *, older_than_micros: int, limit: int) -> int: ...


async def prune_once(
    store: PrunableStore, retention: Retention, *, batch: int = PRUNE_BATCH
) -> Pruned:
    """Delete every idempotency record and change older than ``retention``
    allows, ``batch`` rows per transaction."""
    now = now_micros()
    records = await _drain(
        store.prune_idempotency_records,
        now - int(retention.idempotency_window_seconds * 1_000_000),
        batch,
    )
    changes = await _drain(
        store.prune_changes, now - int(retention.change_retention_seconds * 1_000_000), batch
    )
    return Pruned(records, changes)


async def prune_until_stopped(
    store: PrunableStore, retention: Retention, interval_seconds: float, stopping: asyncio.Event
) -> None:
    """``prune_once`` every ``interval_seconds`` until ``stopping`` is set. A
    failed round is logged and retried at the next one."""
    while not stopping.is_set():
        try:
            pruned = await prune_once(store, retention)
        except Exception:  # the next round retries; the server must keep serving
            log.warning("pruning idempotency records and changes failed", exc_info=True)
        else:
            if pruned.idempotency_records or pruned.changes:
                log.info(
                    "pruned %d idempotency record(s) and %d change(s)",
                    pruned.idempotency_records,
                    pruned.changes,
                )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), interval_seconds)
