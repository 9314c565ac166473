"""``SqlUserData``: the SQLAlchemy implementation of ``UserDataStore``
(erasure, export, import of a user's data as a whole).

Erasure and import are commands (``domain.commands.governance``), each in a
transaction of its own, run by the units of ``erase`` and
``load``; the export reads pages of ``user_export``. The error
contracts are those of ``domain.ports.UserDataStore``.
"""

from __future__ import annotations

from datetime import timedelta

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.governance import DeleteUserData, ImportUserData
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.user_data import ErasureReceipt, ExportItem, ExportSection
from mnemo_server.store.memories.vector_cache import VectorCache
from mnemo_server.store.memories.vectors import EmbedLater
from mnemo_server.store.rows import now_micros, to_datetime
from mnemo_server.store.transactions import units
from mnemo_server.store.transactions.database import Database
from mnemo_server.store.transactions.idempotency import DEFAULT_WINDOW
from mnemo_server.store.user_data import erase, load  # noqa: F401 (load registers its unit)
from mnemo_server.store.user_data import export as user_export

__all__ = ["SqlUserData"]

# Neither command carries a request id: the window does not matter.
_WINDOW_MICROS = DEFAULT_WINDOW // timedelta(microseconds=1)


class SqlUserData:
    """Implements ``UserDataStore`` over ``db``. ``vector_cache``: the
    process's cache of users' vectors (``SqlStore.vector_cache``), from which
    an erased user's vectors are dropped. ``later``: the store's seam to the
    server's embedder (``SqlStore``'s; by default one that does not embed),
    through which both commands run, as ``SqlStore``'s do: the entries an
    import leaves without a vector join the embedding backlog when the
    server embeds."""

    def __init__(
        self,
        db: Database,
        *,
        vector_cache: VectorCache | None = None,
        later: EmbedLater | None = None,
    ) -> None:
        self._db = db
        self._vectors = vector_cache
        self._later = later if later is not None else EmbedLater()

    async def erase_user(self, command: DeleteUserData) -> Written[ErasureReceipt]:
        """After the erasure commits, the SQLite WAL is checkpointed and
        truncated (``erase.checkpoint_wal``) and the user's vectors
        leave this process's cache."""
        erased, cursor = await self._later.write(
            self._db, units.run(command, window_micros=_WINDOW_MICROS), alone=True
        )
        delete_time = to_datetime(now_micros())
        if self._vectors is not None:
            self._vectors.forget_user(command.user_id)
        await self._db.read(erase.checkpoint_wal, alone=True)
        return Written(ErasureReceipt(erased, delete_time), cursor)

    async def export_page(
        self, user_id: str, section: ExportSection, *, limit: int, after: Keyset | None
    ) -> Page[ExportItem]:
        return await self._db.read(
            lambda conn: user_export.page(conn, user_id, section, limit, after)
        )

    async def import_user(self, command: ImportUserData) -> Written[tuple[str, ...]]:
        skipped, cursor = await self._later.write(
            self._db, units.run(command, window_micros=_WINDOW_MICROS), alone=True
        )
        return Written(skipped, cursor)
