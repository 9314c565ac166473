"""SQLite on a full disk, through a real ``mnemo serve``: the database and its
WAL live on a small tmpfs made for the test, a filler file takes the rest of
it. A write that needs space is refused with ``RESOURCE_EXHAUSTED`` /
``STORAGE_FULL``, reads keep working, ``PRAGMA integrity_check`` is ok with
every earlier row in place, and once the filler is deleted the same write
succeeds without restarting the server."""

from __future__ import annotations

import errno
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import grpc
import pytest

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from tests.support.rpc_errors import error_details
from tests.support.subprocess_server import subprocess_server

DISK = "16m"
TIMEOUT_S = 30.0
CONVERSATION = "users/alice/conversations/c1"
# 2 MB: more than the WAL holds before the disk fills (the write needs new
# space), and with its idempotency record well within the 16 MB disk.
BIG_MESSAGES = 8
BIG_CHARS = 250_000


def _mount_tmpfs(directory: Path) -> None:
    if shutil.which("mount") is None:
        pytest.skip("no mount command: cannot make a small filesystem for the test")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a {DISK} tmpfs (needs root): {mounted.stderr.strip()}")


def _unmount(directory: Path) -> None:
    done = subprocess.run(["umount", str(directory)], capture_output=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        subprocess.run(["umount", "-l", str(directory)], check=True, timeout=TIMEOUT_S)


def _fill(path: Path) -> int:
    """Write ``path`` until the filesystem is full; the bytes written."""
    written = 0
    with path.open("wb", buffering=0) as file:
        for chunk in (1 << 20, 4096, 1):
            block = b"\0" * chunk
            while True:
                try:
                    file.write(block)
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
                    break
                written += chunk
    return written


def _message(text: str) -> cv.HistoryMessage:
    return cv.HistoryMessage(message_json=json.dumps({"role": "user", "content": text}))


def _contents(history: conversations_pb2_grpc.ConversationServiceStub) -> list[str]:
    listed = history.ListMessages(
        cv.ListMessagesRequest(parent=CONVERSATION, page_size=1000), timeout=TIMEOUT_S
    )
    return [json.loads(m.message_json)["content"] for m in listed.messages]


def _integrity(database: Path) -> tuple[str, int]:
    conn = sqlite3.connect(database)
    try:
        (check,) = conn.execute("PRAGMA integrity_check").fetchone()
        (rows,) = conn.execute("SELECT count(*) FROM messages").fetchone()
    finally:
        conn.close()
    return str(check), int(rows)


@pytest.mark.sqlite
@pytest.mark.timeout(180)
def test_a_full_disk_refuses_writes_keeps_reads_and_recovers_without_a_restart(
    tmp_path: Path,
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount_tmpfs(disk)
    try:
        database = disk / "mnemo.db"
        with (
            subprocess_server(f"sqlite:///{database}", log_dir=tmp_path / "logs") as server,
            grpc.insecure_channel(server.target) as channel,
        ):
            history = conversations_pb2_grpc.ConversationServiceStub(channel)
            earlier = [f"earlier {n}" for n in range(20)]
            history.AppendMessages(
                cv.AppendMessagesRequest(
                    conversation=CONVERSATION,
                    messages=[_message(text) for text in earlier],
                    request_id="earlier",
                ),
                timeout=TIMEOUT_S,
            )
            filler = disk / "filler"
            assert _fill(filler) > 0
            big = [f"{n} " + "x" * BIG_CHARS for n in range(BIG_MESSAGES)]
            request = cv.AppendMessagesRequest(
                conversation=CONVERSATION,
                messages=[_message(text) for text in big],
                request_id="big",
            )

            with pytest.raises(grpc.RpcError) as refused:
                history.AppendMessages(request, timeout=TIMEOUT_S)
            details = error_details(refused.value)
            assert details.code is grpc.StatusCode.RESOURCE_EXHAUSTED, details
            assert details.reason == "STORAGE_FULL", details
            assert "no space left" in details.message
            assert _contents(history) == earlier  # reads still work
            assert _integrity(database) == ("ok", len(earlier))

            filler.unlink()
            appended = history.AppendMessages(request, timeout=TIMEOUT_S)
            assert [m.position for m in appended.messages] == list(
                range(len(earlier), len(earlier) + BIG_MESSAGES)
            )
            assert _contents(history) == earlier + big
            assert server.starts == 1
            assert server.stop() == 0
        log = server.log_text()
        assert "is full" in log and "Traceback" not in log, server.log_tail()
        assert _integrity(database) == ("ok", len(earlier) + BIG_MESSAGES)
    finally:
        _unmount(disk)
