"""``mnemo serve`` on a SQLite file it must not use: another application's
database, a file that is not a database, a damaged database. Each makes a
real server process exit non-zero with one line naming the file and what is
wrong with it, and leaves the file exactly as it was."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mnemo_server.store import migrate

TIMEOUT_S = 60
PAGE = 4096


def _foreign(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO notes (body) VALUES ('not Mnemo data')")
    conn.close()


def _damaged(path: Path) -> None:
    """A Mnemo database with one page of its ``users`` table overwritten."""
    migrate.upgrade(f"sqlite:///{path}")
    conn = sqlite3.connect(path)
    try:
        conn.executemany(
            "INSERT INTO users (user_id, tenant_id, created_at) VALUES (?, '', 0)",
            [(f"user-{n:05d}-" + "x" * 40,) for n in range(3000)],
        )
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    pages = path.stat().st_size // PAGE
    with path.open("r+b") as file:  # one of the last pages: the users' rows
        file.seek((pages - 3) * PAGE)
        file.write(b"\xa5" * PAGE)


@pytest.mark.sqlite
@pytest.mark.timeout(120)
def test_serve_refuses_another_applications_file_a_non_database_and_a_damaged_one(
    tmp_path: Path,
) -> None:
    foreign, garbage, damaged = (tmp_path / n for n in ("notes.db", "garbage.db", "damaged.db"))
    _foreign(foreign)
    garbage.write_bytes(b"this is a text file, not SQLite\n" * 300)
    _damaged(damaged)
    before = {path: path.read_bytes() for path in (foreign, garbage, damaged)}
    # The three servers start side by side (each start costs seconds of imports).
    processes = {
        path: subprocess.Popen(
            [sys.executable, "-m", "mnemo_server", "serve", "--listen", "127.0.0.1:0"]
            + ["--database-url", f"sqlite:///{path}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in before
    }
    results: dict[Path, tuple[int, str]] = {}
    try:
        for path, process in processes.items():
            _, stderr = process.communicate(timeout=TIMEOUT_S)
            results[path] = (process.returncode, stderr)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(TIMEOUT_S)

    expected = {
        foreign: (2, "is not a Mnemo database: it holds 1 tables (notes)"),
        garbage: (1, "is not a SQLite database (file is not a database)"),
        damaged: (1, "is damaged (database disk image is malformed)"),
    }
    for path, (code, what) in expected.items():
        returncode, stderr = results[path]
        errors = [line for line in stderr.splitlines() if " ERROR " in line]
        assert returncode == code, stderr
        assert len(errors) == 1 and "Traceback" not in stderr, stderr
        assert "refusing to serve: " in errors[0] and str(path) in errors[0], stderr
        assert what in errors[0], stderr
        assert path.read_bytes() == before[path], f"{path} was changed"
        assert not Path(f"{path}-wal").exists()
    assert f"run `mnemo migrate --database-url sqlite:///{foreign}`" in results[foreign][1]
