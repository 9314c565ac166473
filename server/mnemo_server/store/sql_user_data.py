"""``SqlUserData``: the SQLAlchemy implementation of ``UserDataStore``
(erasure, export, import of a user's data as a whole).

Erasure and import are commands (``domain.commands.governance``), each in a
transaction of its own, run by the units of ``sql_user_erase`` and
``sql_user_import``; the export reads pages of ``sql_user_export``. The error
contracts are those of ``store.interfaces.UserDataStore``.
"""

from __future__ import annotations

from datetime import timedelta

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.governance import DeleteUserData, ImportUserData
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.user_data import ErasureReceipt, ExportItem, ExportSection
from mnemo_server.store import sql_user_erase, sql_user_export, units
from mnemo_server.store import sql_user_import as sql_user_import  # registers its unit
from mnemo_server.store.convert import now_micros, to_datetime
from mnemo_server.store.database import Database
from mnemo_server.store.idempotency import DEFAULT_WINDOW
from mnemo_server.store.vector_cache import VectorCache

__all__ = ["SqlUserData"]

# Neither command carries a request id: the window does not matter.
_WINDOW_MICROS = DEFAULT_WINDOW // timedelta(microseconds=1)


class SqlUserData:
    """Implements ``UserDataStore`` over ``db``. ``vector_cache``: the
    process's cache of users' vectors (``SqlStore.vector_cache``), from which
    an erased user's vectors are dropped."""

    def __init__(self, db: Database, *, vector_cache: VectorCache | None = None) -> None:
        self._db = db
        self._vectors = vector_cache

    async def erase_user(self, command: DeleteUserData) -> Written[ErasureReceipt]:
        """After the erasure commits, the SQLite WAL is checkpointed and
        truncated (``sql_user_erase.checkpoint_wal``) and the user's vectors
        leave this process's cache."""
        erased, cursor = await self._db.write(
            units.run(command, window_micros=_WINDOW_MICROS), alone=True
        )
        delete_time = to_datetime(now_micros())
        if self._vectors is not None:
            self._vectors.forget_user(command.user_id)
        await self._db.read(sql_user_erase.checkpoint_wal, alone=True)
        return Written(ErasureReceipt(erased, delete_time), cursor)

    async def export_page(
        self, user_id: str, section: ExportSection, *, limit: int, after: Keyset | None
    ) -> Page[ExportItem]:
        return await self._db.read(
            lambda conn: sql_user_export.page(conn, user_id, section, limit, after)
        )

    async def import_user(self, command: ImportUserData) -> Written[tuple[str, ...]]:
        skipped, cursor = await self._db.write(
            units.run(command, window_micros=_WINDOW_MICROS), alone=True
        )
        return Written(skipped, cursor)
