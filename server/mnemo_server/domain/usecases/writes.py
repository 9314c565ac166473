"""The writes that need no policy beyond the edge's validation: the servicer
builds the command (``domain.commands``), and it goes to the store as it is.

Writes with domain work of their own have use cases of their own:
``Memories.create`` (the near-duplicate check embeds the drafts' texts
before the save), ``Extraction`` (what the extractor finds becomes
``CreateMemories`` or ``ProposeCandidates``). ``Memories.update`` has none:
it hands its ``UpdateMemory`` to the store unchanged, and the store queues a
new text without a vector for the background embedder as every save does.
Each command's docstring states what it does and raises;
``Aborted(CONCURRENT_MODIFICATION)`` and ``Unavailable`` can come from any.
"""

from __future__ import annotations

from typing import TypeVar

from mnemo_server.domain.commands import Command, Written
from mnemo_server.domain.ports import CommandStore

__all__ = ["Writes"]

R = TypeVar("R")


class Writes:
    """Carries out commands."""

    def __init__(self, store: CommandStore) -> None:
        self._store = store

    async def __call__(self, command: Command[R]) -> Written[R]:
        """The command's result and the cursor of its last change."""
        return await self._store.execute(command)
