"""A user's data as a whole (``GovernanceService``: ``DeleteUserData``,
``ExportUserData``, ``ImportUserData``) on top of ``UserDataStore``.

Input is validated at the edge (``api.user_data.import_stream``). The export reads
the sections of ``EXPORT_SECTIONS`` in order, in batches of ``batch_size``
records, each batch one read transaction: a write to the user while the
export runs may show up in a later batch and not in an earlier one (export
a user who is not writing for an exact copy). The governance gates do not
apply: erasure, export and import are the user's rights over the data, and
none of them records analytics events (an erasure leaves nothing behind).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.governance import DeleteUserData, ImportUserData
from mnemo_server.domain.ports import UserDataStore
from mnemo_server.domain.user_data import EXPORT_SECTIONS, ErasureReceipt, ExportItem

DEFAULT_EXPORT_BATCH = 500
"""Records per read transaction of an export."""


class UserDataRights:
    """Erasure, export and import of a user's data."""

    def __init__(self, store: UserDataStore, *, batch_size: int = DEFAULT_EXPORT_BATCH) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._store = store
        self._batch_size = batch_size

    async def erase(self, command: DeleteUserData) -> Written[ErasureReceipt]:
        """Erase everything of the user; idempotent (zeros the second time)."""
        return await self._store.erase_user(command)

    async def export(self, user_id: str) -> AsyncIterator[ExportItem]:
        """Every record of the user, section after section (see the module doc)."""
        for section in EXPORT_SECTIONS:
            after = None
            while True:
                page = await self._store.export_page(
                    user_id, section, limit=self._batch_size, after=after
                )
                for item in page.items:
                    yield item
                if page.next_after is None:
                    break
                after = page.next_after

    async def import_(self, command: ImportUserData) -> Written[tuple[str, ...]]:
        """Load the data into a user without data. Raises
        ``FailedPrecondition(IMPORT_TARGET_NOT_EMPTY)``, ``NotFound``."""
        return await self._store.import_user(command)
