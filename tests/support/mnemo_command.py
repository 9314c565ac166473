"""The ``mnemo`` command in a subprocess (``python -m mnemo_server``), as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

TIMEOUT_S = 120


def run_mnemo(
    *args: str, timeout: float = TIMEOUT_S, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``mnemo ARGS...`` to its end; its exit code, stdout and stderr (never
    raises on failure). ``env``: variables added to this process's."""
    return subprocess.run(
        [sys.executable, "-m", "mnemo_server", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )
