"""Change watches across real ``mnemo serve`` processes on one database: a
write through one process reaches a watcher on another (PostgreSQL:
LISTEN/NOTIFY; SQLite: the per-process poll of the file), and SIGTERM ends a
process's watches with OK so that they resume elsewhere."""

from __future__ import annotations

from pathlib import Path

from mnemo.client import MnemoClient
from tests.api.changes import Watch, cursors, write
from tests.support.subprocess_server import subprocess_server

USER = "u1"
# Heartbeats far apart: a change must arrive by its notice, not by the
# safety re-read a watch does at each heartbeat.
SLOW_HEARTBEAT = ("--watch-heartbeat-seconds", "600")


def test_a_write_through_one_process_reaches_watchers_on_both(
    database_url: str, tmp_path: Path
) -> None:
    with (
        subprocess_server(database_url, *SLOW_HEARTBEAT, log_dir=tmp_path / "a") as a,
        subprocess_server(database_url, *SLOW_HEARTBEAT, log_dir=tmp_path / "b") as b,
        MnemoClient(a.target) as through_a,
        MnemoClient(b.target) as through_b,
    ):
        on_a, on_b = Watch(a.target), Watch(b.target)
        try:
            assert on_a.changes_until_heartbeat() == on_b.changes_until_heartbeat() == []
            through_a.create_conversation(USER, "chat")
            first = write(through_a, 2)
            for watch in (on_a, on_b):
                assert cursors(watch.changes_until(first[-1])) == list(range(1, first[-1] + 1))
            # And the other way round.
            second = write(through_b, 2)
            for watch in (on_a, on_b):
                assert cursors(watch.changes_until(second[-1])) == list(
                    range(first[-1] + 1, second[-1] + 1)
                )
        finally:
            on_a.close()
            on_b.close()


def test_sigterm_ends_watches_with_ok_and_they_resume_on_another_process(
    database_url: str, tmp_path: Path
) -> None:
    with (
        subprocess_server(database_url, log_dir=tmp_path / "a") as a,
        subprocess_server(database_url, log_dir=tmp_path / "b") as b,
        MnemoClient(a.target) as through_a,
    ):
        through_a.create_conversation(USER, "chat")
        before = write(through_a, 1)
        watch = Watch(b.target)
        received = cursors(watch.changes_until_heartbeat())
        assert b.stop() == 0
        assert watch.next() is None  # OK: the end of the stream, no error
        watch.close()
        after = write(through_a, 2)
        resumed = Watch(a.target, after_cursor=received[-1])
        try:
            assert cursors(resumed.changes_until(after[-1])) == list(
                range(before[-1] + 1, after[-1] + 1)
            )
        finally:
            resumed.close()
        assert received == list(range(1, before[-1] + 1))
