"""A throwaway PostgreSQL for tests in other languages (the TypeScript
follower's tests): ``python -m tests.support.postgres_service`` starts one
(``tests.support.pgcluster``; the server of ``$MNEMO_TEST_POSTGRES_URL`` if
set), creates and migrates a database of its own, and prints
one line of JSON: ``{"url": "postgresql+psycopg://..."}`` (the server's
``--database-url``). Then it reads commands, one a line, from stdin:

- ``kill-backends``: ``pg_terminate_backend`` every other client backend of
  that database (a server's lanes and its LISTEN connection); answers
  ``{"killed": N}``.

At the end of stdin (the test closed it, or died) it drops the database,
stops and deletes the cluster and exits.
"""

from __future__ import annotations

import json
import os
import sys

import psycopg

from mnemo_server.store import migrate
from tests.support.pgcluster import (
    ThrowawayPostgres,
    create_database,
    database_url,
    drop_database,
    libpq_url,
)

DATABASE = f"mnemo_follow_{os.getpid()}"
_KILL = (
    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND backend_type = 'client backend'"
)


def _answer(value: dict[str, object]) -> None:
    print(json.dumps(value), flush=True)


def main() -> int:
    with ThrowawayPostgres() as cluster:  # or $MNEMO_TEST_POSTGRES_URL's server
        create_database(cluster.url, DATABASE)
        try:
            url = database_url(cluster.url, DATABASE)
            migrate.upgrade(url)
            _answer({"url": url})
            for line in sys.stdin:
                command = line.strip()
                if command == "kill-backends":
                    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
                        row = conn.execute(_KILL).fetchone()
                    _answer({"killed": int(row[0]) if row else 0})
                elif command:
                    _answer({"error": f"unknown command {command!r}"})
        finally:
            drop_database(cluster.url, DATABASE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
