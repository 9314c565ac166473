"""Waiting for a PostgreSQL server that is not up yet.

Orchestrators start Mnemo and its database together (compose, a Kubernetes
Deployment beside its database, systemd units), so ``mnemo serve`` and
``mnemo migrate`` try to connect for a bounded time before they give up
(``wait_for_database``, ``--database-wait-seconds``). Only failures to connect
at all are retried: nothing listening, a Unix socket not there yet, a host
name not resolvable yet, a connect timeout, a server still starting up or
shutting down (``not_up_yet``). A server that answers and refuses (an unknown
role, a wrong password, a missing database, no ``pg_hba.conf`` entry) is up:
waiting would not change its answer, so that fails at once, as does a
schema to migrate (found after the connection, by ``store.migrate``).

PostgreSQL's refusals at connection time reach psycopg without an SQLSTATE,
so the failure is told apart by libpq's message, in English unless the
server's ``lc_messages`` or the client's locale says otherwise (then a
failure is not recognized as one to wait for, and fails at once as before).
SQLite has no server to wait for.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from mnemo_server.store.engine.engines import describe_url, normalize_url, sqlite_file

__all__ = ["not_up_yet", "wait_for_database"]

# How long between two attempts at most.
RETRY_INTERVAL_S = 0.5
# libpq's (and psycopg's) words for a server that cannot be reached or does
# not take connections yet, lower case: a message with every word of one
# entry is such a failure.
_NOT_UP = (
    ("connection refused",),
    ("on socket", "no such file or directory"),  # the Unix socket is not there yet
    ("could not translate host name",),
    ("failed to resolve host",),
    ("name or service not known",),
    ("temporary failure in name resolution",),
    ("timeout expired",),
    ("timed out",),
    ("no route to host",),
    ("network is unreachable",),
    ("server closed the connection unexpectedly",),
    ("connection reset by peer",),
    ("the database system is starting up",),
    ("the database system is not yet accepting connections",),
    ("the database system is shutting down",),
    ("the database system is in recovery mode",),
)


def not_up_yet(error: BaseException) -> bool:
    """Whether ``error`` is a failure to connect to a server that may yet
    come up (see the module doc), not a refusal by a server that is up."""
    if not isinstance(error, OperationalError):
        return False
    detail = str(error.orig or error).lower()
    return any(all(word in detail for word in words) for words in _NOT_UP)


async def wait_for_database(url: str, seconds: float, announce: Callable[[str], None]) -> None:
    """Return once the PostgreSQL server of ``url`` accepts a connection,
    trying every ``RETRY_INTERVAL_S`` for up to ``seconds`` (the last attempt's
    connect timeout may add up to two seconds). ``announce`` is called once,
    with a line saying what it waits for, at the first failed attempt.

    Returns at once for SQLite and when ``seconds`` is 0. Raises the last
    attempt's ``sqlalchemy.exc.OperationalError`` when the time runs out, and
    any failure that is not ``not_up_yet`` at once; ``ValueError`` for an
    unusable URL.
    """
    if sqlite_file(url) is not None or seconds <= 0:
        return
    deadline = time.monotonic() + seconds
    announced = False
    while True:
        try:
            await asyncio.to_thread(_connect_once, url, deadline - time.monotonic())
            return
        except OperationalError as error:
            left = deadline - time.monotonic()
            if left <= 0 or not not_up_yet(error):
                raise
            if not announced:
                reason = str(error.orig or error).strip().splitlines()[0]
                announce(
                    f"the database {describe_url(url)} does not accept connections yet "
                    f"({reason}): waiting up to {seconds:g}s "
                    "(--database-wait-seconds, MNEMO_DATABASE_WAIT_SECONDS)"
                )
                announced = True
            await asyncio.sleep(min(RETRY_INTERVAL_S, left))


def _connect_once(url: str, left: float) -> None:
    """Open and close one connection, with a connect timeout of what is left
    of the wait (libpq's minimum is 2 s) and at most the server's 10 s."""
    timeout = min(10, max(2, math.ceil(left)))
    engine = create_engine(
        normalize_url(url),
        poolclass=NullPool,
        connect_args={"connect_timeout": timeout, "application_name": "mnemo"},
    )
    try:
        with engine.connect():
            pass
    finally:
        engine.dispose()
