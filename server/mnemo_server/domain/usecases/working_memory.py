"""Working-memory use cases (goliath) on top of ``WorkingMemoryStore``.

Input is validated at the edge (names, sizes, the summary word budget, the
``keep_recent`` range: ``api.working_memory``); the writes are commands
(``domain.commands.working_memory``) carried out by the store.
"""

from __future__ import annotations

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.working_memory import (
    ClearMemoryState,
    RememberExchange,
    SaveMemoryState,
)
from mnemo_server.domain.models import ConversationKey, MemoryState, RememberResult
from mnemo_server.store.interfaces import WorkingMemoryStore


class WorkingMemory:
    """Get, save, remember and clear the working memory of a conversation."""

    def __init__(self, store: WorkingMemoryStore) -> None:
        self._store = store

    async def get(self, key: ConversationKey) -> MemoryState:
        """The state; an empty one with an empty etag if never written."""
        return await self._store.get_state(key)

    async def save(self, command: SaveMemoryState) -> Written[MemoryState]:
        """Replace the state. Raises ``ETAG_MISMATCH``."""
        return await self._store.execute(command)

    async def remember(self, command: RememberExchange) -> Written[RememberResult]:
        """Append the exchange, keep the newest ``keep_recent`` and return the
        evicted ones. Raises ``ETAG_MISMATCH``, ``REQUEST_ID_REUSED``."""
        return await self._store.execute(command)

    async def clear(self, command: ClearMemoryState) -> Written[MemoryState]:
        """Empty the state. Raises ``ETAG_MISMATCH``."""
        return await self._store.execute(command)
