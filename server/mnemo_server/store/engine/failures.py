"""Which database errors are worth another attempt, which mean the
database cannot be reached, and which that it has no space left.

Units of work run statements both through SQLAlchemy (which wraps driver
errors in ``sqlalchemy.exc.DBAPIError``) and on the driver connection
directly (``store.engine.statements``, which raises the driver's own errors), so
both forms are recognized here.

A connection that broke in the middle of a transaction can also surface as
SQLAlchemy's own complaint about that connection's state rather than as a
driver error (``PendingRollbackError``: "Can't reconnect until invalid
transaction is rolled back"), or as psycopg's ``InterfaceError`` on a closed
connection or cursor. None of them says anything about
the write, only that this connection is done: they count as "unavailable"
(the lane drops the connection, the caller gets ``UNAVAILABLE`` and retries
with its request id), never as an unexpected error (``INTERNAL``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import psycopg
from sqlalchemy import exc

from mnemo_server.domain.errors import ResourceExhausted

__all__ = ["Failure", "RetryTransaction", "classify", "retry_cause", "storage_full"]

# serialization_failure, deadlock_detected, and foreign_key_violation: the
# user a write inserts rows for was erased (DeleteUserData) by a transaction
# that committed while the write waited for it; run again, the write creates
# the user anew.
_PG_RETRYABLE = {"40001", "40P01", "23503"}
# PostgreSQL SQLSTATE classes meaning "the server cannot serve now":
# connection exceptions, insufficient resources, operator intervention
# (among them admin_shutdown, a terminated backend, and idle_session_timeout).
_PG_UNAVAILABLE_CLASSES = ("08", "53", "57")
# idle_in_transaction_session_timeout: the server ended the session. Class
# 25, "invalid transaction state", is otherwise a bug.
_PG_UNAVAILABLE = {"25P03"}
# read_only_sql_transaction in a write: a standby (or a primary demoted
# after a failover, or a database set read-only) refuses writes until a
# primary serves again. In a read (read-only by design) it is a bug.
_PG_READ_ONLY = "25006"
# disk_full: PostgreSQL could not extend a file (class 53, otherwise
# "insufficient resources", which are unavailable).
_PG_FULL = "53100"
_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")
_SQLITE_UNAVAILABLE = ("unable to open database", "disk i/o error")
_SQLITE_FULL = "database or disk is full"
# What a caller of a write refused for want of space is told to wait: an
# operator has to free the space first.
STORAGE_FULL_RETRY_SECONDS = 60.0


class RetryTransaction(Exception):
    """Raised by a unit of work to roll back and run again (for example after
    losing an insert race on a unique key); counts as one attempt."""


@dataclass(frozen=True)
class Failure:
    """A database failure: retry the work (``unavailable`` false) or give up
    on this connection (``unavailable``)."""

    reason: str
    unavailable: bool
    error: BaseException
    # No space left (SQLITE_FULL, PostgreSQL's disk_full): the write cannot
    # succeed until space is freed; the connection is given up like an
    # unavailable one.
    storage_full: bool = False


def classify(error: BaseException, *, in_read: bool = False) -> Failure | None:
    """``error`` as a ``Failure``, or ``None`` if it is none of those (a bug,
    or a constraint the work should have prevented: let it surface).
    ``in_read``: it happened in a read-only transaction (where a refused
    write is a bug, not a read-only server)."""
    if isinstance(error, RetryTransaction):
        return Failure("retry requested", False, error)
    if isinstance(error, exc.TimeoutError):
        return Failure("no pooled connection came free", True, error)
    if isinstance(error, exc.PendingRollbackError):
        return Failure(f"the connection broke in a transaction: {error}", True, error)
    invalidated = isinstance(error, exc.DBAPIError) and error.connection_invalidated
    driver = error.orig if isinstance(error, exc.DBAPIError) else error
    if isinstance(driver, psycopg.InterfaceError):
        return Failure(f"PostgreSQL connection unusable: {driver}", True, error)
    if isinstance(driver, psycopg.Error):
        sqlstate = str(driver.sqlstate or "")
        if sqlstate in _PG_RETRYABLE:
            return Failure(f"SQLSTATE {sqlstate}", False, error)
        if sqlstate == _PG_FULL:
            return Failure(f"PostgreSQL storage full: {driver}", True, error, storage_full=True)
        if (
            invalidated
            or sqlstate.startswith(_PG_UNAVAILABLE_CLASSES)
            or sqlstate in _PG_UNAVAILABLE
            or (sqlstate == _PG_READ_ONLY and not in_read)
            or (isinstance(driver, psycopg.OperationalError) and not sqlstate)
        ):
            return Failure(f"PostgreSQL unavailable: {driver}", True, error)
        return None
    if isinstance(driver, sqlite3.Error):
        message = str(driver).lower()
        if any(text in message for text in _SQLITE_BUSY):
            return Failure(message, False, error)
        code = getattr(driver, "sqlite_errorcode", 0) & 0xFF
        if code == sqlite3.SQLITE_FULL or _SQLITE_FULL in message:
            return Failure(f"SQLite storage full: {message}", True, error, storage_full=True)
        if invalidated or any(text in message for text in _SQLITE_UNAVAILABLE):
            return Failure(f"SQLite unavailable: {message}", True, error)
        return None
    if invalidated:
        return Failure(str(error), True, error)
    return None


def retry_cause(failure: Failure) -> str:
    """A short name of why a retryable ``failure`` happened, from a small
    fixed set (a metrics label): ``requested`` (``RetryTransaction``),
    ``serialization``, ``deadlock``, ``foreign_key`` (PostgreSQL), ``busy``
    (SQLite) or ``other``."""
    error = failure.error
    if isinstance(error, RetryTransaction):
        return "requested"
    driver = error.orig if isinstance(error, exc.DBAPIError) else error
    if isinstance(driver, psycopg.Error):
        return _PG_CAUSES.get(str(driver.sqlstate or ""), "other")
    if isinstance(driver, sqlite3.Error):
        return "busy"
    return "other"


_PG_CAUSES = {"40001": "serialization", "40P01": "deadlock", "23503": "foreign_key"}


def storage_full(store: str) -> ResourceExhausted:
    """What the caller of a write gets when ``store`` has no space left
    (``RESOURCE_EXHAUSTED``, reason ``STORAGE_FULL``): nothing of the write
    was stored."""
    return ResourceExhausted(
        f"the database has no space left ({store}): nothing was written; retry once space is freed",
        reason="STORAGE_FULL",
        retry_after_seconds=STORAGE_FULL_RETRY_SECONDS,
    )
