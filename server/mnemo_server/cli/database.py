"""What the subcommands that open the database themselves (``migrate``,
``embeddings``) say when it cannot be used: one line on stderr, and the exit
code ``serve`` would exit with for the same problem (``lifecycle``)."""

from __future__ import annotations

import sys

from sqlalchemy.exc import SQLAlchemyError

from mnemo_server.domain.errors import Unavailable
from mnemo_server.lifecycle import EXIT_FAILURE, EXIT_USAGE, database_problem
from mnemo_server.store.engine.preflight import DatabaseUnusable
from mnemo_server.store.migrate import SchemaOutdated

__all__ = ["DATABASE_PROBLEMS", "refused"]

DATABASE_PROBLEMS = (ValueError, SchemaOutdated, DatabaseUnusable, SQLAlchemyError, Unavailable)
"""What ``refused`` explains: catch these around the work on the database."""


def refused(url: str, error: Exception) -> int:
    """Say why the database at ``url`` cannot be used, on one line of stderr;
    the exit code: 2 for what the operator must change first (an unusable
    URL, a schema to migrate or of another application), 1 for a database
    that cannot be reached or read."""
    code = EXIT_FAILURE
    if isinstance(error, SchemaOutdated | DatabaseUnusable | Unavailable):
        message = error.message
        code = EXIT_USAGE if isinstance(error, SchemaOutdated) else EXIT_FAILURE
    elif isinstance(error, SQLAlchemyError):
        message = database_problem(url, error)
    else:
        message, code = str(error), EXIT_USAGE
    print(f"mnemo: {message}", file=sys.stderr)
    return code
