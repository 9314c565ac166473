"""pytest plugin: the OpenAI Agents SDK's own session tests, run against ``MnemoSession``.

    cd <the unpacked openai-agents sdist> && \\
        .venv-peers/bin/python -m pytest -p openai_agents_plugin tests/memory/test_session.py ...

(``make test-openai-agents`` does it; ``tests/peers/run_openai_agents_suite.py``
fetches the sdist.) At start-up the plugin starts a real Mnemo server on
127.0.0.1 over a throwaway SQLite file (``mnemo serve`` from the project's
``.venv``, or ``$MNEMO_SERVER_PYTHON``) and puts ``SQLiteSession`` — a
``MnemoSession`` that takes ``SQLiteSession``'s constructor arguments — where
the SDK's tests import ``SQLiteSession`` from (``agents``, ``agents.memory``).
The SDK's own modules keep the real class. A database path picks the Mnemo
user (one per file and table pair; ``:memory:``, one per session, as SQLite
gives each in-memory session its own database), the session id the
conversation.

Tests that examine SQLite itself are deselected by name in ``DESELECTED``, each
with its reason; every other collected test must pass. The terminal summary
gives, per file, the tests passed, failed and deselected, and how many of them
made a ``MnemoSession``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import agents
import agents.memory
import pytest

from mnemo.client import MnemoClient, NotFoundError, UnavailableError
from mnemo.integrations.openai_agents import MnemoSession

#: ``file::test`` (a parametrized test: every case) -> why it cannot apply to Mnemo.
DESELECTED: dict[str, str] = {
    "tests/memory/test_session.py::test_sqlite_session_close_closes_worker_thread_connections": (
        "inspects SQLiteSession._connections, the sqlite3 connection of each worker thread"
    ),
    "tests/memory/test_session.py::test_sqlite_session_reaps_connections_from_exited_worker_threads": (
        "inspects SQLiteSession._connections (per-thread sqlite3 connections)"
    ),
    "tests/memory/test_session.py::test_sqlite_session_closes_retired_connections_before_the_next_allocation": (
        "patches sqlite3.connect and counts SQLiteSession._connections"
    ),
    "tests/memory/test_session.py::test_sqlite_session_keeps_connections_of_live_worker_threads": (
        "inspects SQLiteSession._connections and runs SQL on one of them"
    ),
    "tests/memory/test_session.py::test_sqlite_session_pop_item_skips_corrupt_most_recent": (
        "writes invalid JSON rows through SQLiteSession._locked_connection; "
        "Mnemo refuses invalid JSON at the edge (INVALID_MESSAGE), so none can be stored"
    ),
    "tests/memory/test_session.py::test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": (
        "writes invalid JSON rows through SQLiteSession._locked_connection (see above)"
    ),
    "tests/memory/test_session.py::test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": (
        "writes invalid JSON rows through SQLiteSession._locked_connection (see above)"
    ),
    "tests/memory/test_session.py::test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": (
        "writes invalid JSON rows through SQLiteSession._locked_connection (see above)"
    ),
    "tests/memory/test_session.py::test_sqlite_session_file_lock_is_shared_across_instances": (
        "checks SQLiteSession._lock and the class's per-file lock counts"
    ),
    "tests/memory/test_session.py::test_sqlite_session_failed_add_items_releases_write_lock": (
        "probes the SQLite file's write lock and agent_sessions table with sqlite3"
    ),
    "tests/memory/test_session.py::test_sqlite_session_failed_clear_session_rolls_back": (
        "drops a table of the SQLite file and expects sqlite3.OperationalError"
    ),
    "tests/memory/test_session.py::test_sqlite_session_failed_pop_item_releases_write_lock": (
        "drops a table of the SQLite file and expects sqlite3.OperationalError"
    ),
    "tests/memory/test_session.py::test_sqlite_session_rollback_failure_evicts_connection": (
        "injects a sqlite3.Connection subclass through SQLiteSession._get_connection"
    ),
    "tests/memory/test_session.py::test_sqlite_session_close_retries_quarantined_connection": (
        "injects a sqlite3.Connection subclass; checks SQLiteSession._quarantined_connections"
    ),
    "tests/memory/test_session.py::test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": (
        "pauses inside sqlite3.Connection.commit through SQLiteSession._get_connection "
        "(MnemoSession's writes also run to their end under cancellation: "
        "tests/peers/test_openai_agents_session.py checks it against the server)"
    ),
    # EncryptedSession authenticates a pop inside the SQLite transaction only for
    # a real SQLiteSession (its pop_item: "Other backends ... do not provide this
    # atomic authentication guarantee"); with any other backend it delegates to
    # pop_item, so a pop with the wrong key removes the item these tests keep.
    **{
        f"tests/extensions/memory/test_encrypt_session.py::{name}": (
            "EncryptedSession's atomic authenticated pop exists only for a native SQLiteSession "
            "(SQLiteSession._pop_item_with_validation inside its transaction)"
        )
        for name in (
            "test_encrypted_pop_wrong_key_preserves_recoverable_history",
            "test_encrypted_pop_rechecks_authentication_after_expired_tail",
            "test_encrypted_pop_authentication_is_atomic_with_concurrent_mutations",
            "test_encrypted_pop_wrong_key_preserves_row_identity",
            "test_encrypted_pop_cancellation_waits_for_authentication_rollback",
        )
    },
    "tests/extensions/memory/test_encrypt_session.py::test_encrypted_compaction_skips_unencrypted_stored_history": (
        "expects the bounded suffix compaction that OpenAIResponsesCompactionSession gets only "
        "from SQLiteSession._get_compaction_snapshot (type(self) is SQLiteSession); any other "
        "backend compacts the whole history"
    ),
}

_SERVING_ON = re.compile(r" serving on (\S+):(\d+) ")
_START_TIMEOUT_S = 60.0
_REPO = Path(__file__).resolve().parents[2]

_server: dict[str, Any] = {}
#: nodeid -> number of sessions it made.
_made: Counter[str] = Counter()
_current: list[str] = []


class SQLiteSession(MnemoSession):
    """``MnemoSession`` behind ``SQLiteSession``'s constructor, for the SDK's tests."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        super().__init__(
            session_id,
            user=_user_of(db_path, sessions_table, messages_table),
            target=_server["target"],
            # No gRPC deadline: some of the SDK's tests freeze time.time for the
            # whole process (test_encrypt_session's set_fernet_time patches the
            # time module through cryptography.fernet), and grpc computes a
            # deadline from time.time(), so any deadline would be already past.
            # pytest-timeout bounds each test instead.
            timeout=None,
            session_settings=session_settings,
        )
        self.db_path = db_path
        self.sessions_table = sessions_table
        self.messages_table = messages_table
        if _current:
            _made[_current[0]] += 1


def _user_of(db_path: str | Path, sessions_table: str, messages_table: str) -> str:
    if str(db_path) == ":memory:":
        return f"mem-{uuid.uuid4().hex}"
    where = f"{Path(db_path).resolve()}\0{sessions_table}\0{messages_table}"
    return "db-" + hashlib.sha256(where.encode()).hexdigest()[:32]


# ------------------------------------------------------------------ the server


def _start_server() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="mnemo-openai-agents-"))
    python = os.environ.get("MNEMO_SERVER_PYTHON", str(_REPO / ".venv" / "bin" / "python"))
    log_path = workdir / "mnemo-serve.log"
    command = [
        python,
        "-m",
        "mnemo_server",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        f"sqlite:///{workdir / 'mnemo.db'}",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    _server.update(process=process, log=log_path, workdir=workdir)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        match = _SERVING_ON.search(log_path.read_text(errors="replace"))
        if match:
            _server["target"] = f"127.0.0.1:{match.group(2)}"
            break
        if process.poll() is not None:
            break
        time.sleep(0.05)
    else:
        match = None
    if not match:
        _stop_server()
        raise pytest.UsageError(f"mnemo serve did not start:\n{log_path.read_text()[-4000:]}")
    _wait_ready(_server["target"], deadline)


def _wait_ready(target: str, deadline: float) -> None:
    with MnemoClient(target, timeout=5) as client:
        while True:
            try:
                client.get_conversation("readiness", "probe")
            except NotFoundError:
                return
            except UnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def _stop_server() -> None:
    process: subprocess.Popen[bytes] | None = _server.get("process")
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


# ---------------------------------------------------------------- pytest hooks


def pytest_configure(config: pytest.Config) -> None:
    _start_server()
    # Where the tests import it from; agents.memory.sqlite_session keeps the real
    # class, so the SDK's own isinstance checks still mean SQLite.
    agents.SQLiteSession = SQLiteSession  # type: ignore[misc]
    agents.memory.SQLiteSession = SQLiteSession  # type: ignore[misc]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the server; its directory (database, log) goes unless the run failed."""
    _stop_server()
    workdir: Path | None = _server.get("workdir")
    if workdir is None:
        return
    if exitstatus == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"\nthe Mnemo server's log: {_server['log']}")


def pytest_unconfigure(config: pytest.Config) -> None:
    _stop_server()  # when the session never finished (an error at collection)


@pytest.fixture(scope="session")
def mnemo_target() -> str:
    """``127.0.0.1:PORT`` of the run's Mnemo server."""
    return str(_server["target"])


def _key(item: pytest.Item) -> str:
    return item.nodeid.split("[", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselected = [item for item in items if _key(item) in DESELECTED]
    matched = {_key(item) for item in deselected}
    stale = [name for name in DESELECTED if name not in matched]
    collected_files = {item.nodeid.split("::", 1)[0] for item in items}
    stale = [name for name in stale if name.split("::", 1)[0] in collected_files]
    if stale:
        raise pytest.UsageError(f"DESELECTED names no collected test: {stale}")
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if _key(item) not in DESELECTED]
    config.stash[_deselected_key] = deselected


_deselected_key = pytest.StashKey[list[pytest.Item]]()
_outcomes: dict[str, str] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _current[:] = [item.nodeid]
    try:
        return (yield)
    finally:
        _current.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.when == "call" and report.passed:
        _outcomes.setdefault(report.nodeid, "passed")
    elif report.skipped:
        _outcomes.setdefault(report.nodeid, "skipped")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rows: dict[str, Counter[str]] = {}
    for nodeid, outcome in _outcomes.items():
        file = nodeid.split("::", 1)[0]
        rows.setdefault(file, Counter())[outcome] += 1
        if _made[nodeid]:
            rows[file]["used MnemoSession"] += 1
    deselected = config.stash.get(_deselected_key, [])
    if not _made and not deselected:
        return  # a run of tests/peers: MnemoSession directly, not behind SQLiteSession
    for item in deselected:
        rows.setdefault(item.nodeid.split("::", 1)[0], Counter())["deselected"] += 1
    write = terminalreporter.write_line
    terminalreporter.section("MnemoSession in the OpenAI Agents SDK's tests")
    write(f"openai-agents {_version()}, Mnemo server {_server.get('target')}")
    for file, counts in sorted(rows.items()):
        total = sum(counts[k] for k in ("passed", "failed", "skipped", "deselected"))
        write(
            f"{file}: {counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['skipped']} skipped, {counts['deselected']} deselected of {total}; "
            f"{counts['used MnemoSession']} of the run used MnemoSession"
        )
    for name, reason in DESELECTED.items():
        cases = sum(1 for item in deselected if _key(item) == name)
        if cases:
            write(f"  deselected {name.split('::', 1)[1]} ({cases}): {reason}")


def _version() -> str:
    from importlib.metadata import version

    return version("openai-agents")


# The SDK's tests import their helpers as ``tests.*`` from the unpacked sdist.
if "" not in sys.path and os.getcwd() not in sys.path:
    sys.path.insert(0, os.getcwd())
