"""SIGKILL in the middle of a write load, again and again, on both backends.

A real ``mnemo serve`` process takes a write load (tests/concurrency/load.py:
appends, working-memory remembers and keyed memory saves, every one with a
request_id, retried under the same id until acknowledged) and is killed with
SIGKILL ``ROUNDS`` times, each time after a few more writes were acknowledged,
and restarted on the same database (on PostgreSQL alternating one and three
write connections, each running batches of writes). Afterwards every acknowledged write is
present exactly once, positions are dense, and SQLite's ``integrity_check``
says ok.
"""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.concurrency.load import write_load
from tests.support.subprocess_server import subprocess_server

ROUNDS = 20
WRITES_BETWEEN_KILLS = 6
"""Acknowledged writes after each restart before the next kill (so the
server is busy, with writes in flight, when it dies)."""
PG_WRITE_CONNECTIONS = ("3", "1")
"""PostgreSQL's ``--write-connections`` of each restart, in turn (the first start: 1)."""


@pytest.mark.timeout(600)
def test_sigkill_mid_load_loses_no_acknowledged_write(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(20261130)
    started = time.monotonic()
    killed_in_flight = 0
    with (
        subprocess_server(database_url, log_dir=tmp_path) as server,
        write_load(lambda: server.target) as load,
    ):
        for round_ in range(ROUNDS):
            load.wait_for_more(WRITES_BETWEEN_KILLS)
            time.sleep(rng.uniform(0, 0.05))
            killed_in_flight += load.in_flight() > 0
            server.kill()
            if make_url(database_url).get_backend_name() == "postgresql":
                choice = PG_WRITE_CONNECTIONS[round_ % len(PG_WRITE_CONNECTIONS)]
                server.env["MNEMO_WRITE_CONNECTIONS"] = choice
            server.restart()
        load.wait_for_more(WRITES_BETWEEN_KILLS)
        load.finish()
        load.check(server.target)
        assert server.stop() == 0, server.log_tail()
    assert server.starts == ROUNDS + 1
    # The clients saw the crashes: calls broke or waited for the restart.
    assert load.failed_attempts(), "no call ever failed: the kills missed the load"
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        with sqlite3.connect(str(url.database)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with capsys.disabled():
        print(
            f"\ncrash test ({url.get_backend_name()}): {ROUNDS} SIGKILL rounds, "
            f"{load.acknowledged()} writes acknowledged, {killed_in_flight} kills with calls "
            f"in flight, failed attempts retried {dict(load.failed_attempts())}, "
            f"{load.replayed()} committed-but-unacknowledged writes replayed, "
            f"{time.monotonic() - started:.0f}s"
        )
