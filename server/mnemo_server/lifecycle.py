"""``mnemo serve``: run a ``MnemoServer`` until SIGTERM/SIGINT, then shut down gracefully.

At start, exactly one log line: address, store (never a password), runner and
version (and one more for each optional port it opened: the web port, the
metrics port). On SIGTERM or SIGINT: health turns NOT_SERVING for every service, new
calls are refused, in-flight calls get ``grace_period_seconds`` to finish, the
database is closed and the process exits 0. A stale PostgreSQL schema, or a
database of another application, makes ``serve`` refuse to start with exit
code 2 and the command that fixes it; an unreachable database, a file that is
not a database or a damaged one exits 1, with one line saying which and why.
A PostgreSQL that does not accept connections yet is waited for first, up to
``--database-wait-seconds`` (``store.engine.reachable``), saying so once; a
termination signal during that wait exits 0 at once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from sqlalchemy.exc import SQLAlchemyError

from mnemo_server import __version__
from mnemo_server.app import MnemoServer
from mnemo_server.config import Settings
from mnemo_server.observability.logs import JsonFormatter, RedactingFilter
from mnemo_server.store.engine.engines import describe_url
from mnemo_server.store.engine.preflight import DatabaseUnusable
from mnemo_server.store.engine.reachable import wait_for_database
from mnemo_server.store.migrate import SchemaOutdated

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

log = logging.getLogger("mnemo")

_QUIET_LOGGERS = ("alembic", "sqlalchemy", "grpc")


def configure_logging(level: str, log_format: str = "text") -> None:
    """One format for every logger on stderr (``text`` lines, or ``json``
    objects: ``observability.logs``), credentials redacted from every line
    (``RedactingFilter``); libraries stay at WARNING and above."""
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())
        if log_format == "json":
            handler.setFormatter(JsonFormatter())
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLevelName(level)))


def database_problem(url: str, error: SQLAlchemyError) -> str:
    """What went wrong with the database at ``url``, without its password, on
    one line (libpq puts its hint on a line of its own)."""
    detail = str(getattr(error, "orig", None) or error).splitlines()
    shown = "; ".join(part.strip() for part in detail if part.strip())
    return f"the database {describe_url(url)} cannot be used: {shown}"


def start_line(server: MnemoServer) -> str:
    """The one line logged when the server is ready."""
    return f"mnemo {__version__} serving on {server.address} (store {server.describe_store()})"


async def serve(settings: Settings) -> int:
    """Serve until a termination signal; returns the process exit code."""
    # Handlers first: a signal during start-up stops the server once it is up.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await _serve_until(stop, MnemoServer(settings))
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def _serve_until(stop: asyncio.Event, server: MnemoServer) -> int:
    settings = server.settings
    try:
        if not await _database_up(stop, settings):
            log.info("stopped before the database accepted connections")
            return EXIT_OK
        await server.start()
    except SchemaOutdated as error:
        log.error("refusing to serve: %s", error.message)
        return EXIT_USAGE
    except DatabaseUnusable as error:
        log.error("refusing to serve: %s", error.message)
        return EXIT_FAILURE
    except (ValueError, RuntimeError) as error:
        log.error("cannot start: %s", error)
        return EXIT_USAGE
    except SQLAlchemyError as error:
        log.error("cannot start: %s", database_problem(settings.effective_database_url, error))
        return EXIT_FAILURE
    log.info("%s", start_line(server))
    await stop.wait()
    log.info("shutting down: in-flight calls have %ss to finish", settings.grace_period_seconds)
    await server.stop(settings.grace_period_seconds)
    log.info("stopped")
    return EXIT_OK


async def _database_up(stop: asyncio.Event, settings: Settings) -> bool:
    """Wait for the database as ``--database-wait-seconds`` allows
    (``reachable.wait_for_database``, saying so once in the log); ``False``
    if a termination signal came first. Raises what that raises."""
    waiting = asyncio.ensure_future(
        wait_for_database(
            settings.effective_database_url, settings.database_wait_seconds, log.warning
        )
    )
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        waiting.cancel()
    if not waiting.done():
        return False
    waiting.result()
    return True


def run(settings: Settings) -> int:
    """``serve`` on a fresh event loop, with logging configured."""
    configure_logging(settings.log_level, settings.log_format)
    return asyncio.run(serve(settings))
