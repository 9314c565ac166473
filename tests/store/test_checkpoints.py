"""Graph checkpoints (``CheckpointStore`` and the checkpoint commands), on
every backend; on PostgreSQL every statement passes the shard audit
(``tests/store/conftest.py``)."""

from __future__ import annotations

import json

from mnemo_server.domain.checkpoints import (
    CheckpointQuery,
    PendingWrite,
    PruneStrategy,
    StoredCheckpoint,
    ThreadKey,
)
from mnemo_server.domain.commands.checkpoints import (
    CopyThread,
    DeleteCheckpointsForRuns,
    DeleteThread,
    PruneThreads,
    PutCheckpoint,
    PutCheckpointWrites,
)
from mnemo_server.store.composed import SqlStore

T1 = ThreadKey("alice", "t1")


async def _put(
    store: SqlStore, checkpoint_id: str, *, key: ThreadKey = T1, ns: str = "", **metadata: object
) -> None:
    await store.execute(
        PutCheckpoint(
            caller=None,
            user_id=key.user_id,
            checkpoint=StoredCheckpoint(
                thread_id=key.thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                parent_checkpoint_id="",
                type="msgpack",
                checkpoint=bytes(range(256)) + checkpoint_id.encode(),
                metadata_json=json.dumps(metadata),
            ),
        )
    )


async def _write(store: SqlStore, checkpoint_id: str, *writes: tuple[str, int, bytes]) -> int:
    written = await store.execute(
        PutCheckpointWrites(
            caller=None,
            user_id=T1.user_id,
            thread_id=T1.thread_id,
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            writes=tuple(
                PendingWrite(task_id=task, idx=idx, channel="ch", type="bytes", value=value)
                for task, idx, value in writes
            ),
        )
    )
    return written.value


async def _ids(
    store: SqlStore, ns: str | None = "", limit: int = 100, **wanted: object
) -> list[str]:
    found = await store.checkpoints.list_checkpoints(
        CheckpointQuery(key=T1, checkpoint_ns=ns, metadata_filter=wanted, before="", limit=limit)
    )
    return [c.checkpoint_id for c in found]


async def test_bytes_round_trip_and_the_newest_is_the_greatest_id(sql_store: SqlStore) -> None:
    await _put(sql_store, "b", step=1)
    await _put(sql_store, "a", step=0)
    await _write(sql_store, "b", ("t", 0, b"\x00\x01"), ("t", -1, b"err"))
    latest = await sql_store.checkpoints.get_checkpoint(T1, "", "")
    assert latest is not None and latest.checkpoint_id == "b"
    assert latest.checkpoint == bytes(range(256)) + b"b"
    assert [(w.idx, w.value) for w in latest.pending_writes] == [(-1, b"err"), (0, b"\x00\x01")]
    assert await sql_store.checkpoints.get_checkpoint(T1, "", "c") is None
    assert await sql_store.checkpoints.get_checkpoint(T1, "other", "") is None


async def test_a_filtered_list_scans_past_a_page_of_misses(sql_store: SqlStore) -> None:
    for n in range(450):  # more than reads._SCAN rows that do not match, twice over
        await _put(sql_store, f"{n:04d}", source="input" if n in (3, 7) else "loop")
    assert await _ids(sql_store, source="input") == ["0007", "0003"]
    assert await _ids(sql_store, source="input", limit=1) == ["0007"]
    assert len(await _ids(sql_store, ns=None, limit=5)) == 5


async def test_writes_copy_prune_and_runs(sql_store: SqlStore) -> None:
    await _put(sql_store, "1", run_id="r1")
    await _put(sql_store, "2", run_id="r2")
    await _put(sql_store, "3", ns="sub", run_id="r2")
    assert await _write(sql_store, "2", ("t", 0, b"x"), ("t", 1, b"y")) == 2
    assert await _write(sql_store, "2", ("t", 0, b"changed")) == 0
    copy = CopyThread(caller=None, user_id="alice", source_thread_id="t1", target_thread_id="t2")
    assert (await sql_store.execute(copy)).value == 3
    copied = await sql_store.checkpoints.get_checkpoint(ThreadKey("alice", "t2"), "", "")
    assert copied is not None and [w.value for w in copied.pending_writes] == [b"x", b"y"]
    prune = PruneThreads(
        caller=None, user_id="alice", thread_ids=("t1",), strategy=PruneStrategy.KEEP_LATEST
    )
    assert (await sql_store.execute(prune)).value == 1
    assert await _ids(sql_store, ns=None) == ["3", "2"]
    runs = DeleteCheckpointsForRuns(caller=None, user_id="alice", run_ids=("r2", "nope"))
    assert (await sql_store.execute(runs)).value == 4
    assert await _ids(sql_store, ns=None) == []
    deleted = await sql_store.execute(DeleteThread(caller=None, user_id="alice", thread_id="t2"))
    assert deleted.value == 1 and deleted.change_cursor > 0
    everything = PruneThreads(
        caller=None, user_id="alice", thread_ids=("t2",), strategy=PruneStrategy.DELETE
    )
    assert (await sql_store.execute(everything)).value == 0
