"""``SqlCheckpointStore``: the reads of graph checkpoints, each one read
transaction of ``Database`` over ``reads`` (the writes are commands:
``SqlStore.execute``, units in ``writes``)."""

from __future__ import annotations

from mnemo_server.domain.checkpoints import CheckpointQuery, StoredCheckpoint, ThreadKey
from mnemo_server.store.checkpoints import reads
from mnemo_server.store.transactions.database import Database

__all__ = ["SqlCheckpointStore"]


class SqlCheckpointStore:
    """Implements ``CheckpointStore`` over ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_checkpoint(
        self, key: ThreadKey, checkpoint_ns: str, checkpoint_id: str
    ) -> StoredCheckpoint | None:
        return await self._db.read(
            lambda conn: reads.get(conn, key, checkpoint_ns, checkpoint_id), short=True
        )

    async def list_checkpoints(self, query: CheckpointQuery) -> list[StoredCheckpoint]:
        return await self._db.read(lambda conn: reads.list_page(conn, query))
