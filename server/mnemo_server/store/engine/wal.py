"""Emptying SQLite's write-ahead log after a write that erased text
(``Tx.truncate_wal``): ``truncate_wal``.

In WAL mode a commit appends the pages it changed to ``<file>-wal``; the
pages as they were before stay there, in earlier frames, until a checkpoint
copies the latest version of each page into the database file and the log
starts over. So after a delete the WAL still holds the deleted text (the
row as it was, its earlier versions, its change-feed records), for as long
as the log is not restarted, and a kill -9 leaves it on disk.
``PRAGMA secure_delete=ON`` (``engines``) zeroes the freed space in the
pages the delete writes; ``PRAGMA wal_checkpoint(TRUNCATE)`` then copies
those pages into the database file, syncs it, and truncates the WAL to zero
bytes: no file of the database holds the old pages any more. An
acknowledged write is not at risk: a checkpoint copies committed pages and
syncs the database file before it truncates the log.

Readers: a TRUNCATE checkpoint takes the write lock, then waits for every
reader that still reads from the WAL (one that began before the checkpoint)
to finish, with the connection's busy timeout (``SQLITE_BUSY_TIMEOUT_MS``,
during which writes wait too). Mnemo's own reads last milliseconds. A reader
that holds its snapshot longer (another process: a backup, a ``sqlite3``
shell, a WAL replicator such as Litestream, which does so on purpose) makes
the checkpoint give up: the WAL is then not truncated, a warning is logged,
and the next truncating write (another delete, or a retry of this one) tries
again. Retrying at once would only stall the writes for another busy timeout
behind the same reader.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["truncate_wal"]

log = logging.getLogger(__name__)

_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"


def truncate_wal(dbapi_connection: Any, describe: str) -> bool:
    """Checkpoint the WAL of a SQLite driver connection that has no open
    transaction, and truncate it (see the module doc); whether it was
    truncated. Never raises: a failure (readers outlasting the busy timeout,
    an I/O error) is logged, naming the database ``describe``."""
    try:
        busy, _frames, _copied = dbapi_connection.execute(_TRUNCATE).fetchone()
    except Exception as error:
        log.warning("the WAL of %s could not be truncated after a delete: %s", describe, error)
        return False
    if busy:
        log.warning(
            "the WAL of %s could not be truncated after a delete: a reader held an older "
            "snapshot past the busy timeout; the deleted text stays in the WAL until the next "
            "delete truncates it",
            describe,
        )
        return False
    return True
