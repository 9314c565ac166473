"""The ``mnemo`` package itself."""

from __future__ import annotations

import subprocess
import sys

import mnemo
import mnemo.client


def test_importing_mnemo_does_not_import_grpc() -> None:
    probe = "import sys, mnemo; print('grpc' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


def test_the_clients_are_reachable_from_the_top_package() -> None:
    assert mnemo.MnemoClient is mnemo.client.MnemoClient
    assert mnemo.AsyncMnemoClient is mnemo.client.AsyncMnemoClient
    assert mnemo.MnemoError is mnemo.client.MnemoError
