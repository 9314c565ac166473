"""Units of work on graph checkpoints (``domain.commands.checkpoints``).

A put upserts one ``graph_checkpoints`` row; writes upsert-or-keep
``graph_checkpoint_writes`` rows by (task_id, idx) with LangGraph's rule (see
``PutCheckpointWrites``). No row lock is needed: every write is one
statement per row on its primary key, and two puts of the same key are the
same checkpoint (the later one wins, as in LangGraph's SQL savers).

The change feed (``store.feed.changes``): a put is an UPSERT of
``.../threads/{thread}/checkpoints/{id}`` with a ``CheckpointRef`` (no bytes);
writes an UPSERT of that name listing the writes stored (no values); a
checkpoint pruned or deleted for its run a DELETE of its name (with the ref,
for its namespace); a deleted thread (or pruned with ``DELETE``) one DELETE of
``users/{user}/threads/{thread}``. Deleted checkpoints' earlier changes lose
their state, as a deleted conversation's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Table, delete, select, tuple_

from mnemo_server.domain.changes import ChangeOperation, NewChange
from mnemo_server.domain.checkpoints import (
    CheckpointRef,
    PendingWrite,
    PruneStrategy,
    StoredCheckpoint,
    ThreadKey,
    checkpoint_name,
    ref_of,
    thread_name,
)
from mnemo_server.domain.commands.checkpoints import (
    CopyThread,
    DeleteCheckpointsForRuns,
    DeleteThread,
    PruneThreads,
    PutCheckpoint,
    PutCheckpointWrites,
)
from mnemo_server.store.checkpoints.reads import CHUNK
from mnemo_server.store.engine.dialect import insert_for
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.rows import now_micros, to_datetime
from mnemo_server.store.schema import graph_checkpoint_writes, graph_checkpoints
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit
from mnemo_server.store.users import ensure_user

_cp, _wr = graph_checkpoints.c, graph_checkpoint_writes.c
_CHECKPOINT_KEY = ["user_id", "thread_id", "checkpoint_ns", "checkpoint_id"]
_WRITE_KEY = [*_CHECKPOINT_KEY, "task_id", "idx"]


def _upsert(tx: Tx, table: Table, key: list[str], rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows``, replacing the columns of rows whose ``key`` exists."""
    if not rows:
        return
    insert = insert_for(tx, table)
    statement = insert.on_conflict_do_update(
        index_elements=key,
        set_={c.name: insert.excluded[c.name] for c in table.columns if c.name not in key},
    )
    tx.conn.execute(statement, list(rows))


def _checkpoint_row(user_id: str, checkpoint: StoredCheckpoint, now: int) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "thread_id": checkpoint.thread_id,
        "checkpoint_ns": checkpoint.checkpoint_ns,
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_checkpoint_id": checkpoint.parent_checkpoint_id,
        "checkpoint_type": checkpoint.type,
        "checkpoint": checkpoint.checkpoint,
        "metadata_json": checkpoint.metadata_json,
        "run_id": checkpoint.run_id,
        "created_at": now,
    }


@unit(PutCheckpoint)
def put(tx: Tx, command: PutCheckpoint) -> StoredCheckpoint:
    """Upsert the checkpoint; the stored one (with its time), without its bytes."""
    now = now_micros()
    ensure_user(tx, command.caller, command.user_id, now)
    checkpoint = command.checkpoint
    _upsert(
        tx, graph_checkpoints, _CHECKPOINT_KEY, [_checkpoint_row(command.user_id, checkpoint, now)]
    )
    stored = replace(checkpoint, checkpoint=b"", create_time=to_datetime(now), pending_writes=())
    name = checkpoint_name(command.key, checkpoint.checkpoint_id)
    change_log.append(tx, command.user_id, [change_log.upsert(name, ref_of(stored))])
    return stored


def _write_row(command: PutCheckpointWrites, write: PendingWrite, now: int) -> dict[str, Any]:
    return {
        "user_id": command.user_id,
        "thread_id": command.thread_id,
        "checkpoint_ns": command.checkpoint_ns,
        "checkpoint_id": command.checkpoint_id,
        "task_id": write.task_id,
        "idx": write.idx,
        "channel": write.channel,
        "value_type": write.type,
        "value": write.value,
        "task_path": write.task_path,
        "created_at": now,
    }


@unit(PutCheckpointWrites)
def put_writes(tx: Tx, command: PutCheckpointWrites) -> int:
    """Store the writes (replace when all are special, else keep what is
    stored); how many rows were written."""
    if not command.writes:
        return 0
    now = now_micros()
    ensure_user(tx, command.caller, command.user_id, now)
    rows = [_write_row(command, write, now) for write in command.writes]
    if all(write.idx < 0 for write in command.writes):
        # The last of writes with one key wins, as in LangGraph's savers
        # (executemany of INSERT OR REPLACE); one statement must not upsert
        # a row twice.
        last = {(w.task_id, w.idx): (w, row) for w, row in zip(command.writes, rows, strict=True)}
        _upsert(tx, graph_checkpoint_writes, _WRITE_KEY, [row for _, row in last.values()])
        stored = [w for w, _ in last.values()]
    else:
        # RETURNING tells an inserted row from a skipped one on both drivers;
        # of writes with one key, the first wins (INSERT OR IGNORE's rule).
        statement = (
            insert_for(tx, graph_checkpoint_writes).on_conflict_do_nothing().returning(_wr.idx)
        )
        stored = [
            write
            for write, row in zip(command.writes, rows, strict=True)
            if tx.conn.execute(statement, row).first() is not None
        ]
    if stored:
        ref = ref_of(
            StoredCheckpoint(
                thread_id=command.thread_id,
                checkpoint_ns=command.checkpoint_ns,
                checkpoint_id=command.checkpoint_id,
                parent_checkpoint_id="",
                type="",
                checkpoint=b"",
                metadata_json="{}",
            ),
            tuple(stored),
        )
        name = checkpoint_name(command.key, command.checkpoint_id)
        change_log.append(tx, command.user_id, [change_log.upsert(name, ref)])
    return len(stored)


def _delete_thread_rows(conn: Connection, key: ThreadKey) -> int:
    """Delete the thread's writes and checkpoints; how many checkpoints (and
    writes, when there were writes without a checkpoint: then at least 1)."""
    writes = conn.execute(
        delete(graph_checkpoint_writes).where(
            _wr.user_id == key.user_id, _wr.thread_id == key.thread_id
        )
    ).rowcount
    checkpoints = conn.execute(
        delete(graph_checkpoints).where(_cp.user_id == key.user_id, _cp.thread_id == key.thread_id)
    ).rowcount
    return int(checkpoints) if checkpoints or not writes else -1


def _forget_thread(tx: Tx, key: ThreadKey, removed: int) -> None:
    """The feed after a thread was emptied (``removed`` != 0)."""
    if not removed:
        return
    name = thread_name(key)
    change_log.strip_states(tx.conn, key.user_id, [], [f"{name}/"])
    change_log.append(tx, key.user_id, [NewChange(ChangeOperation.DELETE, name)])


@unit(DeleteThread)
def delete_thread(tx: Tx, command: DeleteThread) -> int:
    """Delete the thread's rows; how many checkpoints."""
    removed = _delete_thread_rows(tx.conn, command.key)
    _forget_thread(tx, command.key, removed)
    return max(removed, 0)


@unit(CopyThread)
def copy_thread(tx: Tx, command: CopyThread) -> int:
    """Copy the source thread's rows to the target; how many checkpoints."""
    user_id = command.user_id
    source, target = command.source_thread_id, command.target_thread_id
    checkpoints = tx.conn.execute(
        select(graph_checkpoints).where(_cp.user_id == user_id, _cp.thread_id == source)
    ).all()
    writes = tx.conn.execute(
        select(graph_checkpoint_writes).where(_wr.user_id == user_id, _wr.thread_id == source)
    ).all()
    now = now_micros()
    copied = [{**row._asdict(), "thread_id": target, "created_at": now} for row in checkpoints]
    _upsert(tx, graph_checkpoints, _CHECKPOINT_KEY, copied)
    _upsert(
        tx,
        graph_checkpoint_writes,
        _WRITE_KEY,
        [{**row._asdict(), "thread_id": target, "created_at": now} for row in writes],
    )
    target_key = ThreadKey(user_id, target)
    feed = [
        change_log.upsert(
            checkpoint_name(target_key, row["checkpoint_id"]),
            CheckpointRef(
                thread_id=target,
                checkpoint_ns=row["checkpoint_ns"],
                checkpoint_id=row["checkpoint_id"],
                parent_checkpoint_id=row["parent_checkpoint_id"],
                type=row["checkpoint_type"],
                metadata_json=row["metadata_json"],
                create_time=to_datetime(now),
            ),
        )
        for row in sorted(copied, key=lambda r: r["checkpoint_id"])
    ]
    change_log.append(tx, user_id, feed)
    return len(copied)


def _delete_checkpoints(tx: Tx, user_id: str, doomed: Sequence[tuple[str, str, str]]) -> None:
    """Delete the (thread, namespace, id) checkpoints with their writes,
    strip their earlier changes and append a DELETE of each."""
    for start in range(0, len(doomed), CHUNK):
        chunk = list(doomed[start : start + CHUNK])
        for table, c in ((graph_checkpoint_writes, _wr), (graph_checkpoints, _cp)):
            tx.conn.execute(
                delete(table).where(
                    c.user_id == user_id,
                    tuple_(c.thread_id, c.checkpoint_ns, c.checkpoint_id).in_(chunk),
                )
            )
    names = [checkpoint_name(ThreadKey(user_id, t), i) for t, _, i in doomed]
    change_log.strip_states(tx.conn, user_id, names)
    change_log.append(
        tx,
        user_id,
        [
            NewChange(
                ChangeOperation.DELETE,
                name,
                "",
                CheckpointRef(thread_id=thread, checkpoint_ns=ns, checkpoint_id=checkpoint_id),
            )
            for name, (thread, ns, checkpoint_id) in zip(names, doomed, strict=True)
        ],
    )


@unit(PruneThreads)
def prune(tx: Tx, command: PruneThreads) -> int:
    """Prune each thread; how many checkpoints were deleted."""
    user_id, total = command.user_id, 0
    for thread_id in dict.fromkeys(command.thread_ids):
        key = ThreadKey(user_id, thread_id)
        if command.strategy is PruneStrategy.DELETE:
            removed = _delete_thread_rows(tx.conn, key)
            _forget_thread(tx, key, removed)
            total += max(removed, 0)
            continue
        rows = tx.conn.execute(
            select(_cp.checkpoint_ns, _cp.checkpoint_id)
            .where(_cp.user_id == user_id, _cp.thread_id == thread_id)
            .order_by(_cp.checkpoint_ns, _cp.checkpoint_id.desc())
        ).all()
        latest: dict[str, str] = {}
        doomed: list[tuple[str, str, str]] = []
        for ns, checkpoint_id in rows:
            if ns in latest:
                doomed.append((thread_id, ns, checkpoint_id))
            else:
                latest[ns] = checkpoint_id
        if doomed:
            _delete_checkpoints(tx, user_id, doomed)
        total += len(doomed)
    return total


@unit(DeleteCheckpointsForRuns)
def delete_for_runs(tx: Tx, command: DeleteCheckpointsForRuns) -> int:
    """Delete the user's checkpoints of the runs; how many."""
    run_ids = sorted(set(command.run_ids))
    doomed: list[tuple[str, str, str]] = []
    for start in range(0, len(run_ids), CHUNK):
        doomed += [
            (row.thread_id, row.checkpoint_ns, row.checkpoint_id)
            for row in tx.conn.execute(
                select(_cp.thread_id, _cp.checkpoint_ns, _cp.checkpoint_id)
                .where(
                    _cp.user_id == command.user_id, _cp.run_id.in_(run_ids[start : start + CHUNK])
                )
                .order_by(_cp.thread_id, _cp.checkpoint_ns, _cp.checkpoint_id)
            )
        ]
    if doomed:
        _delete_checkpoints(tx, command.user_id, doomed)
    return len(doomed)
