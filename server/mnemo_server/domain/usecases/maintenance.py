"""The server's maintenance task: idempotency records past their window and
changes past their retention are deleted, in bounded batches, every
``--purge-interval-seconds`` until the server stops (``MnemoServer`` starts
it next to the purge of temporary conversations).

Until a record is pruned it is already ignored once older than the window
(``store.transactions.idempotency``); pruning only frees the rows. A change pruned is gone
for good: a cursor before it gets ``CURSOR_EXPIRED`` (``store.feed.changes``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mnemo_server.domain.clock import now_micros
from mnemo_server.domain.ports import ChangeStore, CommandStore
from mnemo_server.runtime.periodic import drain, repeat_until_stopped

__all__ = ["PRUNE_BATCH", "Pruned", "Retention", "prune_once", "prune_until_stopped"]

PRUNE_BATCH = 1000
"""Rows deleted per transaction."""


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


async def prune_once(
    commands: CommandStore, feed: ChangeStore, retention: Retention, *, batch: int = PRUNE_BATCH
) -> Pruned:
    """Delete every idempotency record and change older than ``retention``
    allows, ``batch`` rows per transaction."""
    now = now_micros()
    records_before = now - int(retention.idempotency_window_seconds * 1_000_000)
    changes_before = now - int(retention.change_retention_seconds * 1_000_000)
    records = await drain(
        lambda limit: commands.prune_idempotency_records(
            older_than_micros=records_before, limit=limit
        ),
        batch,
    )
    changes = await drain(
        lambda limit: feed.prune_changes(older_than_micros=changes_before, limit=limit), batch
    )
    return Pruned(records, changes)


async def prune_until_stopped(
    commands: CommandStore,
    feed: ChangeStore,
    retention: Retention,
    interval_seconds: float,
    stopping: asyncio.Event,
) -> None:
    """``prune_once`` every ``interval_seconds`` until ``stopping`` is set (a
    failed round is logged and retried at the next one)."""

    async def round_() -> str:
        pruned = await prune_once(commands, feed, retention)
        if not (pruned.idempotency_records or pruned.changes):
            return ""
        return (
            f"pruned {pruned.idempotency_records} idempotency record(s)"
            f" and {pruned.changes} change(s)"
        )

    await repeat_until_stopped(
        round_, interval_seconds, stopping, "pruning idempotency records and changes"
    )
