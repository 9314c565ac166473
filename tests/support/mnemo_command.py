"""The ``mnemo`` command in a subprocess (``python -m mnemo_server``), as a user runs it."""

from __future__ import annotations

import subprocess
import sys

TIMEOUT_S = 120


def run_mnemo(*args: str, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """``mnemo ARGS...`` to its end; its exit code, stdout and stderr (never raises on failure)."""
    return subprocess.run(
        [sys.executable, "-m", "mnemo_server", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
