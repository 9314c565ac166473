"""A pytest plugin that runs LangGraph's own store tests against ``MnemoStore``.

``make test-langgraph`` runs ``tests/test_store.py`` of the pinned
``langgraph-checkpoint`` sdist with ``-p langgraph_store_plugin`` (this
directory on ``PYTHONPATH``), in the peers' venv. The plugin:

- starts one real Mnemo server (``$MNEMO_SERVE serve``, the project venv's
  ``mnemo``) on 127.0.0.1, over a throwaway SQLite database, for the session;
- replaces ``InMemoryStore`` in the test module by ``PeerStore``, a
  ``MnemoStore`` subclass taking ``InMemoryStore``'s arguments: every store a
  test builds (also inside the module's ``MockAsyncBatchedStore``) is a
  ``MnemoStore`` against that server, for a user of its own, so tests never
  see each other's data. The tests' spies on ``InMemoryStore.batch`` /
  ``abatch`` spy on ``PeerStore``'s;
- deselects by name the tests in ``DESELECTED``, each with its reason.

Nothing of LangGraph's tests is copied here.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from mnemo.integrations.langgraph import MnemoStore

DESELECTED: dict[str, str] = {}
"""Test ids (``tests/test_store.py::name``) left out, each with its reason."""

START_TIMEOUT_S = 60.0
_SERVING_ON = re.compile(r" serving on (\S+):(\d+) ")


class _Server:
    """The session's ``mnemo serve`` process."""

    def __init__(self) -> None:
        self.target = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._directory = tempfile.TemporaryDirectory(prefix="mnemo-langgraph-")
        self._log = Path(self._directory.name) / "server.log"

    def start(self) -> None:
        command = os.environ.get("MNEMO_SERVE", "mnemo")
        database = Path(self._directory.name) / "mnemo.db"
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                [
                    command,
                    "serve",
                    "--listen",
                    "127.0.0.1:0",
                    "--database-url",
                    f"sqlite:///{database}",
                    "--embedder",
                    "none",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = _SERVING_ON.search(self._log.read_text(errors="replace"))
            if found:
                self.target = f"127.0.0.1:{found.group(2)}"
                return
            if self._process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("mnemo serve did not start:\n" + self._log.read_text(errors="replace"))

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(30)
        self._directory.cleanup()


_SERVER = _Server()
_STORES: list[MnemoStore] = []


def server_target() -> str:
    """``127.0.0.1:PORT`` of the session's server."""
    return _SERVER.target


class PeerStore(MnemoStore):
    """``MnemoStore`` built as the tests build ``InMemoryStore`` (``index=``),
    for a new user on the session's server."""

    def __init__(self, *, index: Any = None, **options: Any) -> None:
        super().__init__(_SERVER.target, user=f"lg-{uuid.uuid4().hex[:20]}", index=index, **options)
        _STORES.append(self)


def pytest_configure(config: pytest.Config) -> None:
    _SERVER.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    for store in _STORES:
        store.close()
    _SERVER.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "InMemoryStore"):
            module.InMemoryStore = PeerStore
        name = item.nodeid.split("[", 1)[0]
        (dropped if name in DESELECTED else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(
        f"MnemoStore: {len(_STORES)} stores built against mnemo serve at {_SERVER.target}"
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"MnemoStore against mnemo serve at {_SERVER.target or '(not started)'}"]
    lines += [f"deselected {name}: {reason}" for name, reason in DESELECTED.items()]
    return lines
