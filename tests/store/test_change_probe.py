"""The SQLite ``data_version`` probe of the change notifier, whose ``read``
and ``close`` run in worker threads (a stopped poll's ``close`` can arrive
while its last ``read`` is still running: that once crashed ``make test``)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from mnemo_server.store.feed.notify import _DataVersion


def test_the_version_moves_when_another_connection_commits(tmp_path: Path) -> None:
    path = str(tmp_path / "probe.db")
    probe = _DataVersion(path)
    before = probe.read()
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE t (x INTEGER)")
    assert probe.read() != before
    probe.close()


def test_close_during_reads_in_other_threads_waits_for_them_and_ends_reading(
    tmp_path: Path,
) -> None:
    probe = _DataVersion(str(tmp_path / "probe.db"))
    probe.read()
    outcomes: list[str] = []
    start = threading.Barrier(5)

    def reader() -> None:
        start.wait()
        for _ in range(2_000):
            try:
                probe.read()
            except sqlite3.ProgrammingError:
                outcomes.append("closed")
                return
        outcomes.append("finished")

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    start.wait()
    probe.close()
    for thread in threads:
        thread.join(timeout=30)
    assert len(outcomes) == 4
    with pytest.raises(sqlite3.ProgrammingError):
        probe.read()
    probe.close()  # closing twice is harmless
