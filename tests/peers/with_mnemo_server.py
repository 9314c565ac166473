"""Run a command beside a live Mnemo server: ``python -m mnemo_server serve``
on 127.0.0.1 (a free port) over a throwaway SQLite file, the command given
``MNEMO_TARGET=127.0.0.1:PORT``; exits with the command's status and always
stops the server.

    .venv/bin/python -m tests.peers.with_mnemo_server -- .venv-langgraph/bin/python script.py

The peers' suites run in venvs of their own (their pinned packages beside
mnemo-client), which have no server: this runs in the project's ``.venv``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.subprocess_server import subprocess_server

COMMAND_TIMEOUT_S = 300


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print("usage: python -m tests.peers.with_mnemo_server -- COMMAND...", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mnemo-peers-") as directory:
        url = f"sqlite:///{Path(directory) / 'mnemo.db'}"
        with subprocess_server(url, log_dir=Path(directory) / "logs") as server:
            env = {**os.environ, "MNEMO_TARGET": server.target}
            return subprocess.run(
                command, env=env, timeout=COMMAND_TIMEOUT_S, check=False
            ).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
