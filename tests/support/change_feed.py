"""The change feed's store, reached directly from tests."""

from __future__ import annotations

import asyncio

from mnemo_server.store.composed import SqlStore
from mnemo_server.store.transactions.database import open_database


def prune_all_changes(database_url: str) -> None:
    """Prune every change the store's retention may prune (as if all were
    older than the retention), so that early cursors expire."""

    async def prune() -> None:
        database = open_database(database_url, read_lanes=1)
        try:
            await SqlStore(database).feed.prune_changes(older_than_micros=2**62, limit=10_000)
        finally:
            await database.close()

    asyncio.run(prune())
