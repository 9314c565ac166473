"""The SQL of checkpoint reads (``domain.checkpoints``): one checkpoint, a
page of a thread's checkpoints, and their pending writes.

Every statement is held to the user (``user_id = :value``: the shard audit of
``tests/support/shard_audit.py``) and to the thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, select, tuple_

from mnemo_server.domain.checkpoints import (
    CheckpointQuery,
    PendingWrite,
    StoredCheckpoint,
    ThreadKey,
    metadata_matches,
)
from mnemo_server.store.rows import to_datetime
from mnemo_server.store.schema import graph_checkpoint_writes, graph_checkpoints

__all__ = ["checkpoint_of", "get", "keys_of", "list_page", "writes_of"]

_cp, _wr = graph_checkpoints.c, graph_checkpoint_writes.c
CHUNK = 500
"""Keys per ``IN`` list."""
_SCAN = 200
"""Rows of metadata a filtered list reads per query."""


def _of_thread(key: ThreadKey) -> tuple[ColumnElement[bool], ...]:
    return (_cp.user_id == key.user_id, _cp.thread_id == key.thread_id)


def checkpoint_of(row: Any, writes: Sequence[PendingWrite] = ()) -> StoredCheckpoint:
    """A ``graph_checkpoints`` row (every column) as the domain's checkpoint."""
    return StoredCheckpoint(
        thread_id=row.thread_id,
        checkpoint_ns=row.checkpoint_ns,
        checkpoint_id=row.checkpoint_id,
        parent_checkpoint_id=row.parent_checkpoint_id,
        type=row.checkpoint_type,
        checkpoint=bytes(row.checkpoint),
        metadata_json=row.metadata_json,
        create_time=to_datetime(row.created_at),
        pending_writes=tuple(writes),
    )


def _write_of(row: Any) -> PendingWrite:
    return PendingWrite(
        task_id=row.task_id,
        idx=int(row.idx),
        channel=row.channel,
        type=row.value_type,
        value=bytes(row.value),
        task_path=row.task_path,
    )


def writes_of(
    conn: Connection, key: ThreadKey, checkpoints: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], list[PendingWrite]]:
    """The pending writes of each (namespace, id) of the thread, in
    (task_path, task_id, idx) order (LangGraph's ``writes_sort_key``)."""
    wanted = sorted(set(checkpoints))
    found: dict[tuple[str, str], list[PendingWrite]] = {k: [] for k in wanted}
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start : start + CHUNK]
        rows = conn.execute(
            select(graph_checkpoint_writes)
            .where(
                _wr.user_id == key.user_id,
                _wr.thread_id == key.thread_id,
                tuple_(_wr.checkpoint_ns, _wr.checkpoint_id).in_(chunk),
            )
            .order_by(_wr.task_path, _wr.task_id, _wr.idx)
        )
        for row in rows:
            found[(row.checkpoint_ns, row.checkpoint_id)].append(_write_of(row))
    return found


def get(
    conn: Connection, key: ThreadKey, checkpoint_ns: str, checkpoint_id: str
) -> StoredCheckpoint | None:
    """The checkpoint (``checkpoint_id`` ``""``: the newest of the namespace)
    with its writes, or ``None``."""
    query = select(graph_checkpoints).where(*_of_thread(key), _cp.checkpoint_ns == checkpoint_ns)
    if checkpoint_id:
        query = query.where(_cp.checkpoint_id == checkpoint_id)
    row = conn.execute(query.order_by(_cp.checkpoint_id.desc()).limit(1)).first()
    if row is None:
        return None
    writes = writes_of(conn, key, [(row.checkpoint_ns, row.checkpoint_id)])
    return checkpoint_of(row, writes[(row.checkpoint_ns, row.checkpoint_id)])


def keys_of(conn: Connection, query: CheckpointQuery) -> list[tuple[str, str]]:
    """The (namespace, id) of the checkpoints ``query`` lists, newest first:
    without a metadata filter one query; with one, the metadata is read
    ``_SCAN`` rows at a time and matched here (JSON equality, the same on
    every backend) until ``limit`` match."""
    base = select(_cp.checkpoint_ns, _cp.checkpoint_id, _cp.metadata_json).where(
        *_of_thread(query.key)
    )
    if query.checkpoint_ns is not None:
        base = base.where(_cp.checkpoint_ns == query.checkpoint_ns)
    before, found = query.before, list[tuple[str, str]]()
    while len(found) < query.limit:
        page = base if not before else base.where(_cp.checkpoint_id < before)
        size = query.limit - len(found) if not query.metadata_filter else _SCAN
        rows = conn.execute(
            page.order_by(_cp.checkpoint_id.desc(), _cp.checkpoint_ns.desc()).limit(size)
        ).all()
        for row in rows:
            if metadata_matches(row.metadata_json, query.metadata_filter):
                found.append((row.checkpoint_ns, row.checkpoint_id))
                if len(found) == query.limit:
                    break
        if len(rows) < size:
            break
        before = rows[-1].checkpoint_id
    return found


def list_page(conn: Connection, query: CheckpointQuery) -> list[StoredCheckpoint]:
    """``CheckpointStore.list_checkpoints``."""
    keys = keys_of(conn, query)
    rows: dict[tuple[str, str], Any] = {}
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        for row in conn.execute(
            select(graph_checkpoints).where(
                *_of_thread(query.key),
                tuple_(_cp.checkpoint_ns, _cp.checkpoint_id).in_(chunk),
            )
        ):
            rows[(row.checkpoint_ns, row.checkpoint_id)] = row
    writes = writes_of(conn, query.key, keys)
    return [checkpoint_of(rows[k], writes[k]) for k in keys if k in rows]
