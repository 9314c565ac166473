"""A deleted memory's text leaves every file of a SQLite database when
``DeleteMemory`` returns: ``mnemo.db``, ``mnemo.db-wal`` and ``mnemo.db-shm``,
read byte by byte, hold neither the entry's text nor its earlier version's
text, nor their stems (the full-text index stores stems), while the server
runs and after it is killed with SIGKILL. The text of an entry that was not
deleted is still there (so the search would find a deleted one too), and
after the kill every acknowledged write is there, the delete included.

The first two cases write the entry's change-feed records too (a watch
streams them, and stays open across the delete, a reader of the same file),
an earlier version (an update) and a recorded result (a request id). The
third holds a read transaction open in another connection past the busy
timeout: the delete succeeds, the WAL keeps the text until the next delete.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc, sync_pb2, sync_pb2_grpc
from mnemo_server.domain.text_search import query_terms
from tests.support.server import running_server
from tests.support.subprocess_server import subprocess_server

pytestmark = [pytest.mark.sqlite, pytest.mark.timeout(120)]

USER = "users/alice"
# Words of their own: no shared prefix with anything else in the file (FTS5
# stores terms prefix-compressed), each its own stem.
FIRST = "Zqvorbfirst"
"""In the deleted entry's first text (an earlier version once updated)."""
LATER = "Xkjwplater"
"""In the deleted entry's text at the time of the delete."""
KEPT = "Wvyqkept"
"""In an entry that is not deleted."""
CALL_TIMEOUT_S = 30.0
WATCH_TIMEOUT_S = 60.0


def _spellings(word: str) -> set[bytes]:
    """``word`` as written and as the index and term counts hold it."""
    return {word.encode(), *(term.encode() for term in query_terms(word))}


def _database_files(path: Path) -> dict[str, bytes]:
    """Every file of the database at ``path``, by name."""
    found = sorted(path.parent.glob(path.name + "*"))
    assert path in found
    return {f.name: f.read_bytes() for f in found}


def _holding(files: dict[str, bytes], word: str) -> list[str]:
    """The files holding ``word`` in any of its spellings."""
    return [name for name, data in files.items() if any(s in data for s in _spellings(word))]


@contextmanager
def _watching(target: str) -> Iterator[Any]:
    """A watch of the user's changes (the streaming call), open for the block."""
    with grpc.insecure_channel(target) as channel:
        stub = sync_pb2_grpc.SyncServiceStub(channel)
        call = stub.WatchChanges(sync_pb2.WatchChangesRequest(parent=USER), timeout=WATCH_TIMEOUT_S)
        try:
            yield call
        finally:
            call.cancel()


def _save_update_delete(target: str) -> list[str]:
    """Save the entry to delete (with a request id), update it, watch its
    changes stream, save the one to keep, delete the first, save one more;
    the names of the deleted entry and of the two kept ones."""
    with grpc.insecure_channel(target) as channel, _watching(target) as watch:
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        created = stub.CreateMemory(
            mm.CreateMemoryRequest(
                parent=USER,
                memory=mm.Memory(text=f"The locker code word is {FIRST}"),
                request_id="save-the-secret",
            ),
            timeout=CALL_TIMEOUT_S,
        ).memory
        stub.UpdateMemory(
            mm.UpdateMemoryRequest(
                memory=mm.Memory(name=created.name, text=f"The locker code word is {LATER}"),
                update_mask=FieldMask(paths=["text"]),
            ),
            timeout=CALL_TIMEOUT_S,
        )
        kept = stub.CreateMemory(
            mm.CreateMemoryRequest(
                parent=USER, memory=mm.Memory(text=f"The bike lock code word is {KEPT}")
            ),
            timeout=CALL_TIMEOUT_S,
        ).memory
        streamed = []
        for event in watch:
            if event.HasField("change"):
                streamed.append(event.change)
            if len(streamed) == 3:
                break
        assert len(streamed) == 3
        stub.DeleteMemory(mm.DeleteMemoryRequest(name=created.name), timeout=CALL_TIMEOUT_S)
        after = stub.CreateMemory(
            mm.CreateMemoryRequest(parent=USER, memory=mm.Memory(text="Saved after the delete")),
            timeout=CALL_TIMEOUT_S,
        ).memory
    return [created.name, kept.name, after.name]


def _assert_only_the_kept_text(path: Path) -> None:
    files = _database_files(path)
    found = {word: _holding(files, word) for word in (FIRST, LATER, KEPT)}
    assert found[FIRST] == found[LATER] == [], found
    assert found[KEPT], found


def test_deleted_text_is_in_no_file_while_the_server_runs(tmp_path: Path) -> None:
    path = tmp_path / "mnemo.db"
    with running_server(f"sqlite:///{path}") as target:
        _save_update_delete(target)
        _assert_only_the_kept_text(path)


def test_deleted_text_is_in_no_file_after_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "mnemo.db"
    with subprocess_server(
        f"sqlite:///{path}", "--embedder", "none", log_dir=tmp_path / "logs"
    ) as server:
        deleted, *kept = _save_update_delete(server.target)
        _assert_only_the_kept_text(path)
        server.kill()
        _assert_only_the_kept_text(path)
        # Every acknowledged write survived the kill, the delete included.
        server.start()
        with grpc.insecure_channel(server.target) as channel:
            stub = memories_pb2_grpc.MemoryServiceStub(channel)
            for name in kept:
                stub.GetMemory(mm.GetMemoryRequest(name=name), timeout=CALL_TIMEOUT_S)
            with pytest.raises(grpc.RpcError) as gone:
                stub.GetMemory(mm.GetMemoryRequest(name=deleted), timeout=CALL_TIMEOUT_S)
            assert gone.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_reader_holding_an_old_snapshot_delays_the_truncation_not_the_delete(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Another process's read transaction (a sqlite3 shell, a backup) outlasts
    # the checkpoint's busy timeout: the delete still succeeds, the WAL keeps
    # the old pages and a warning says so; the next delete truncates it.
    path = tmp_path / "mnemo.db"
    with running_server(f"sqlite:///{path}") as target, grpc.insecure_channel(target) as channel:
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        first, second = (
            stub.CreateMemory(
                mm.CreateMemoryRequest(parent=USER, memory=mm.Memory(text=text)),
                timeout=CALL_TIMEOUT_S,
            ).memory
            for text in (f"The code word is {FIRST}", f"The code word is {LATER}")
        )
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM memories").fetchone()
            stub.DeleteMemory(mm.DeleteMemoryRequest(name=first.name), timeout=CALL_TIMEOUT_S)
            assert _holding(_database_files(path), FIRST) == ["mnemo.db-wal"]
        finally:
            reader.close()
        assert "could not be truncated" in caplog.text
        stub.DeleteMemory(mm.DeleteMemoryRequest(name=second.name), timeout=CALL_TIMEOUT_S)
        files = _database_files(path)
        assert _holding(files, FIRST) == _holding(files, LATER) == []
