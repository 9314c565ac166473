"""Graph checkpoint reads on top of ``CheckpointStore``.

Input is validated at the edge (``api.checkpoints``); the writes are commands
(``domain.commands.checkpoints``) that go to the store as they are
(``usecases.writes``).
"""

from __future__ import annotations

from mnemo_server.domain.checkpoints import (
    CheckpointQuery,
    StoredCheckpoint,
    ThreadKey,
    thread_name,
)
from mnemo_server.domain.errors import not_found
from mnemo_server.domain.ports import CheckpointStore


class Checkpoints:
    """Reads the checkpoints of threads."""

    def __init__(self, store: CheckpointStore) -> None:
        self._store = store

    async def get(self, key: ThreadKey, checkpoint_ns: str, checkpoint_id: str) -> StoredCheckpoint:
        """The checkpoint (``""``: the newest of the namespace). Raises
        ``NotFound`` naming the thread (and the checkpoint, when asked for one)."""
        found = await self._store.get_checkpoint(key, checkpoint_ns, checkpoint_id)
        if found is None:
            name = thread_name(key)
            if checkpoint_id:
                name = f"{name}/checkpoints/{checkpoint_id}"
            raise not_found(name)
        return found

    async def list(self, query: CheckpointQuery) -> list[StoredCheckpoint]:
        """A page of the thread's checkpoints, newest first."""
        return await self._store.list_checkpoints(query)
