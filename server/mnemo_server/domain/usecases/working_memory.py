"""Working-memory reads (goliath) on top of ``WorkingMemoryStore``.

Input is validated at the edge (names, sizes, the summary word budget, the
``keep_recent`` range: ``api.working_memory.servicer``); the writes are commands
(``domain.commands.working_memory``) that go to the store as they are
(``usecases.writes``).
"""

from __future__ import annotations

from mnemo_server.domain.models import ConversationKey, MemoryState
from mnemo_server.domain.ports import WorkingMemoryStore


class WorkingMemory:
    """Reads the working memory of a conversation."""

    def __init__(self, store: WorkingMemoryStore) -> None:
        self._store = store

    async def get(self, key: ConversationKey) -> MemoryState:
        """The state; an empty one with an empty etag if never written."""
        return await self._store.get_state(key)
