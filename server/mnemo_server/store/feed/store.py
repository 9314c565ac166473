"""``SqlChangeStore``: reading and pruning the change feed (``changes``);
the error contracts are those of ``domain.ports.ChangeStore``."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from mnemo_server.domain.changes import ChangePage
from mnemo_server.domain.identity import Caller
from mnemo_server.store.feed import changes
from mnemo_server.store.transactions.database import Database

__all__ = ["SqlChangeStore"]


class SqlChangeStore:
    """Implements ``ChangeStore`` over ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def changes_after(
        self, user_id: str, after_cursor: int, *, limit: int, caller: Caller | None
    ) -> ChangePage:
        return await self._db.read(
            lambda conn: changes.changes_after(conn, user_id, after_cursor, limit, caller)
        )

    async def latest_cursors(self, user_ids: Collection[str]) -> Mapping[str, int]:
        return await self._db.read(lambda conn: changes.latest_cursors(conn, user_ids))

    async def prune_changes(self, *, older_than_micros: int, limit: int) -> int:
        pruned, _ = await self._db.write(
            lambda tx: changes.prune(tx.conn, older_than_micros, limit)
        )
        return pruned
