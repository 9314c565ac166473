"""``SqlUserData``: the SQLAlchemy implementation of ``UserDataStore``
(erasure, export, import of a user's data as a whole).

Each method is one transaction of ``Database`` running a unit of work from
``sql_user_erase``, ``sql_user_export`` or ``sql_user_import``; the error
contracts are those of ``store.interfaces.UserDataStore``.
"""

from __future__ import annotations

from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.user_data import ErasureReceipt, ExportItem, ExportSection, UserData
from mnemo_server.store import sql_user_erase, sql_user_export, sql_user_import
from mnemo_server.store.convert import now_micros, to_datetime
from mnemo_server.store.database import Database
from mnemo_server.store.vector_cache import VectorCache

__all__ = ["SqlUserData"]


class SqlUserData:
    """Implements ``UserDataStore`` over ``db``. ``vector_cache``: the
    process's cache of users' vectors (``SqlStore.vector_cache``), from which
    an erased user's vectors are dropped."""

    def __init__(self, db: Database, *, vector_cache: VectorCache | None = None) -> None:
        self._db = db
        self._vectors = vector_cache

    async def erase_user(self, user_id: str) -> ErasureReceipt:
        """After the erasure commits, the SQLite WAL is checkpointed and
        truncated (``sql_user_erase.checkpoint_wal``) and the user's vectors
        leave this process's cache."""
        deleted = await self._db.write(lambda conn: sql_user_erase.erase_user(conn, user_id))
        delete_time = to_datetime(now_micros())
        if self._vectors is not None:
            self._vectors.forget_user(user_id)
        await self._db.read(sql_user_erase.checkpoint_wal)
        return ErasureReceipt(deleted, delete_time)

    async def export_page(
        self, user_id: str, section: ExportSection, *, limit: int, after: Keyset | None
    ) -> Page[ExportItem]:
        return await self._db.read(
            lambda conn: sql_user_export.page(conn, user_id, section, limit, after)
        )

    async def import_user(self, user_id: str, data: UserData) -> None:
        await self._db.write(lambda conn: sql_user_import.import_user(conn, user_id, data))
