"""The Python conformance scenarios against a server on a Citus cluster (``make test-citus``).

    MNEMO_TEST_CITUS_BINDIR=/usr/lib/postgresql/15/bin .venv/bin/python -m tests.conformance.run_citus

Starts a throwaway Citus cluster (``tests.support.citus``: a coordinator and
two workers on 127.0.0.1, from the PostgreSQL with Citus that
``MNEMO_TEST_CITUS_BINDIR`` names), makes a database on it, runs ``mnemo
migrate --distribute`` on it, starts ``mnemo serve --auth none`` on the
coordinator's database and runs the Python runner (``tests.conformance.run``)
against it; extra arguments go to that runner (scenario folders or files).
When a scenario failed, prints the server's log lines with ``ERROR`` (they
name what Citus refused). Exits with the runner's code, or 2 when no Citus
installation is given.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.conformance import run
from tests.support.citus import CitusCluster, CitusUnavailable
from tests.support.subprocess_server import subprocess_server

DATABASE = "mnemo_conformance"
EXIT_NO_CITUS = 2
# The lines of a logged traceback that say what the database refused.
_ERROR_LINES = ("sqlalchemy.exc.", "psycopg.errors.", "[SQL: ")


def main(argv: Sequence[str] | None = None) -> int:
    paths = list(sys.argv[1:] if argv is None else argv)
    try:
        cluster = CitusCluster().start()
    except CitusUnavailable as error:
        print(f"run_citus: {error}", file=sys.stderr)
        return EXIT_NO_CITUS
    with cluster, tempfile.TemporaryDirectory(prefix="mnemo-conformance-citus-") as directory:
        cluster.create_database(DATABASE)
        print(cluster.migrate_and_distribute(DATABASE), end="", flush=True)
        url = cluster.database_url(DATABASE)
        with subprocess_server(url, "--auth", "none", log_dir=Path(directory) / "logs") as server:
            code = run.main(["--target", server.target, *paths])
            if code != 0:  # the server's errors say what Citus refused
                errors = [
                    line
                    for line in server.log_text().splitlines()
                    if "ERROR" in line or line.startswith(_ERROR_LINES)
                ]
                print("\n".join(["==> the server's errors", *errors]), flush=True)
            return code


if __name__ == "__main__":
    sys.exit(main())
