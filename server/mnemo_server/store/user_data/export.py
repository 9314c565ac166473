"""Reading a user's data for an export (``ExportUserData``), section by
section, in pages: each page is one read transaction of its own (the caller
runs ``page`` in ``Database.read``).

Every section has a deterministic order, keyed by values that an import
keeps (ids compared bytewise, positions, versions) or by the insertion order
an import reproduces (``memories.id``, ``failed_runs.id``, ``events.id``):

- ``conversations``, ``memory_states``: by conversation id (the default
  conversation's working memory, id ``""``, first);
- ``messages``: by conversation id, then position;
- ``compaction_checkpoints``: by conversation id, then sequence (with the
  marker of a cleared, uncompacted history, sequence 0);
- ``failed_runs``: by conversation id, then the order they were recorded;
- ``memories`` (archived ones too, with their vectors): the order they were saved;
- ``memory_versions``: by entry (the order of ``memories``), then version;
- ``tombstones``: by memory id; ``candidates``: by creation time, then id;
- ``consent``, ``memory_settings``: one record each, when ever set;
- ``events``: the order they were recorded;
- ``documents`` (with their indexed texts and embeddings): the order they were
  first written.
- ``graph_checkpoints`` (with their pending writes): by thread, namespace and
  id (``store.checkpoints.user_data``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, func, select

from mnemo_server.domain.governance import EventScope
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.user_data import (
    CompactionCheckpoint,
    ConversationFailedRun,
    ConversationMessage,
    ConversationState,
    ExportItem,
    ExportSection,
    MemoryVersion,
)
from mnemo_server.store import paging
from mnemo_server.store import rows as convert
from mnemo_server.store.checkpoints import user_data as graph_checkpoints
from mnemo_server.store.documents import rows as document_rows
from mnemo_server.store.engine import dialect
from mnemo_server.store.governance import consent
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.memories import rows
from mnemo_server.store.memories.versions import earlier_versions
from mnemo_server.store.schema import (
    compaction_checkpoints,
    conversations,
    documents,
    failed_runs,
    memories,
    memory_candidates,
    memory_tombstones,
    memory_versions,
    messages,
    working_memory,
)

__all__ = ["page"]

Item = Callable[[Row[Any]], ExportItem]
Section = Callable[[Connection, str, int, Keyset | None], Page[ExportItem]]


def _keyed_page(
    conn: Connection,
    statement: Select[Any],
    keys: Sequence[ColumnElement[Any]],
    item: Item,
    limit: int,
    after: Keyset | None,
) -> Page[ExportItem]:
    """The first ``limit`` rows of ``statement`` in ``keys`` order after ``after``."""
    labels = [f"export_key_{i}" for i in range(len(keys))]
    statement = statement.add_columns(
        *(key.label(label) for key, label in zip(keys, labels, strict=True))
    )
    statement = paging.oldest_first(statement, keys, after, limit)
    return paging.read_page(
        conn, statement, limit, item, lambda row: tuple(getattr(row, n) for n in labels)
    )


def _conversation_id(conn: Connection) -> ColumnElement[str]:
    return dialect.by_id(conn, conversations.c.conversation_id)


def _of_conversations(table: Any, user_id: str) -> Select[Any]:
    """``table`` (a child of ``conversations``) with its conversation's id as ``cid``."""
    return (
        select(table, conversations.c.conversation_id.label("cid"))
        .select_from(table.join(conversations))
        .where(table.c.user_id == user_id, conversations.c.user_id == user_id)
    )


def _conversations(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    statement = select(conversations).where(
        conversations.c.user_id == user_id, conversations.c.conversation_id != ""
    )
    return _keyed_page(
        conn, statement, [_conversation_id(conn)], convert.conversation, limit, after
    )


def _children_of_conversations(
    table: Any, keys: Sequence[ColumnElement[Any]], item: Callable[[str, Row[Any]], ExportItem]
) -> Section:
    """The section of a child of ``conversations``: its rows in the order of
    their conversation's id, then ``keys``; ``item(cid, row)`` each."""

    def section(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
        keyed = [_conversation_id(conn), *keys]
        rows_of = _of_conversations(table, user_id)
        return _keyed_page(conn, rows_of, keyed, lambda row: item(row.cid, row), limit, after)

    return section


_memory_states = _children_of_conversations(
    working_memory, (), lambda cid, row: ConversationState(cid, convert.memory_state(row))
)
_messages = _children_of_conversations(
    messages,
    (messages.c.position,),
    lambda cid, row: ConversationMessage(cid, convert.stored_message(row)),
)
_failed_runs = _children_of_conversations(
    failed_runs,
    (failed_runs.c.id,),
    lambda cid, row: ConversationFailedRun(cid, convert.failed_run(row)),
)


def _checkpoint(row: Row[Any]) -> CompactionCheckpoint:
    if row.seq is None:
        return CompactionCheckpoint(
            conversation_id=row.cid, generation=row.conversation_generation, sequence=0
        )
    return CompactionCheckpoint(
        conversation_id=row.cid,
        generation=row.generation,
        sequence=row.seq,
        covered=row.covered,
        replacement=convert.new_messages(row.replacement_json),
        run_id=row.run_id,
        create_time=convert.to_datetime(row.created_at),
    )


def _checkpoints(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    """The current generation's checkpoints, or the marker of a history
    cleared and not compacted since (no checkpoint, generation > 1)."""
    checkpoints = compaction_checkpoints
    joined = conversations.outerjoin(
        checkpoints,
        (checkpoints.c.conversation_pk == conversations.c.id)
        & (checkpoints.c.user_id == conversations.c.user_id)
        & (checkpoints.c.generation == conversations.c.generation),
    )
    statement = (
        select(
            checkpoints,
            conversations.c.conversation_id.label("cid"),
            conversations.c.generation.label("conversation_generation"),
        )
        .select_from(joined)
        .where(
            conversations.c.user_id == user_id,
            checkpoints.c.seq.is_not(None) | (conversations.c.generation > 1),
        )
    )
    keys = [_conversation_id(conn), func.coalesce(checkpoints.c.seq, 0)]
    return _keyed_page(conn, statement, keys, _checkpoint, limit, after)


def _memories(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    statement = (
        select(*rows.MEMORY_COLUMNS)
        .select_from(rows.MEMORY_FROM)
        .where(memories.c.user_id == user_id)
    )
    return _keyed_page(conn, statement, [memories.c.id], rows.memory, limit, after)


def _versions(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    statement = earlier_versions().where(
        memory_versions.c.user_id == user_id, memories.c.user_id == user_id
    )
    return _keyed_page(
        conn,
        statement,
        [memories.c.id, memory_versions.c.version],
        lambda row: MemoryVersion(row.version, rows.memory(row)),
        limit,
        after,
    )


def _tombstones(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    statement = select(memory_tombstones).where(memory_tombstones.c.user_id == user_id)
    keys = [dialect.by_id(conn, memory_tombstones.c.memory_id)]
    return _keyed_page(conn, statement, keys, rows.tombstone, limit, after)


def _candidates(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    statement = select(memory_candidates).where(memory_candidates.c.user_id == user_id)
    keys = [memory_candidates.c.created_at, dialect.by_id(conn, memory_candidates.c.candidate_id)]
    return _keyed_page(conn, statement, keys, rows.candidate, limit, after)


def _consent(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    decided = consent.get_consent(conn, user_id)
    return Page(() if decided.update_time is None else (decided,))


def _settings(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    settings = consent.get_settings(conn, user_id)
    return Page(() if settings.update_time is None else (settings,))


_BEFORE_EVERY_EVENT = (-(2**62), 0)


def _events(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    found = event_log.oldest_first(
        conn, EventScope(user_id=user_id), (), after or _BEFORE_EVERY_EVENT, limit + 1
    )
    return paging.page(
        found, limit, lambda event: event, lambda e: (convert.to_micros(e.create_time), e.sequence)
    )


def _documents(conn: Connection, user_id: str, limit: int, after: Keyset | None) -> Page[Any]:
    statement = select(*document_rows.COLUMNS).where(documents.c.user_id == user_id)
    return _keyed_page(conn, statement, [documents.c.id], document_rows.document, limit, after)


_SECTIONS: dict[ExportSection, Section] = {
    ExportSection.CONSENT: _consent,
    ExportSection.MEMORY_SETTINGS: _settings,
    ExportSection.CONVERSATIONS: _conversations,
    ExportSection.MEMORY_STATES: _memory_states,
    ExportSection.MESSAGES: _messages,
    ExportSection.COMPACTION_CHECKPOINTS: _checkpoints,
    ExportSection.FAILED_RUNS: _failed_runs,
    ExportSection.MEMORIES: _memories,
    ExportSection.MEMORY_VERSIONS: _versions,
    ExportSection.TOMBSTONES: _tombstones,
    ExportSection.CANDIDATES: _candidates,
    ExportSection.EVENTS: _events,
    ExportSection.DOCUMENTS: _documents,
    ExportSection.GRAPH_CHECKPOINTS: graph_checkpoints.export_page,
}


def page(
    conn: Connection, user_id: str, section: ExportSection, limit: int, after: Keyset | None
) -> Page[ExportItem]:
    """``UserDataStore.export_page``: up to ``limit`` records of ``section``
    after keyset ``after`` (see the module doc for the orders)."""
    return _SECTIONS[section](conn, user_id, limit, after)
