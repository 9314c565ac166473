"""Units of work on working memory: one ``working_memory`` row per
conversation (the default conversation included), written under the
conversation's row lock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, and_, bindparam, or_, select, update

from mnemo_server.domain import codec, events
from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.commands.working_memory import (
    ClearMemoryState,
    RememberExchange,
    SaveMemoryState,
)
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.models import ConversationKey, Exchange, MemoryState, RememberResult
from mnemo_server.domain.names import memory_state_name
from mnemo_server.domain.working_memory import window
from mnemo_server.store import rows as convert
from mnemo_server.store.conversations import conversation as conversation_rows
from mnemo_server.store.engine.failures import RetryTransaction
from mnemo_server.store.engine.statements import Statement, insert_per_dialect
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.schema import conversations, working_memory
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit

_c, _w = conversations.c, working_memory.c
_STATE_COLUMNS = (_w.summary, _w.recent_json, _w.etag, _w.updated_at)
_OF_CONVERSATION = (
    _c.user_id == bindparam("user_id"),
    _c.conversation_id == bindparam("conversation_id"),
    or_(_c.expire_at.is_(None), _c.expire_at > bindparam("now")),
)
_GET = Statement(
    select(*_STATE_COLUMNS)
    .join(conversations, _c.id == _w.conversation_pk)
    .where(*_OF_CONVERSATION, _w.user_id == bindparam("user_id"))
)
# The conversation (locked) and its state, if any, in one statement.
_LOCK = Statement(
    select(
        _c.id.label("pk"),
        _w.conversation_pk.label("state_pk"),
        *_STATE_COLUMNS,
    )
    .select_from(
        conversations.outerjoin(
            working_memory, and_(_w.conversation_pk == _c.id, _w.user_id == _c.user_id)
        )
    )
    .where(*_OF_CONVERSATION)
    .with_for_update(of=conversations)
)
# A first write's insert does nothing when the state exists after all: on
# PostgreSQL (READ COMMITTED) a write that waited for the conversation's lock
# gets the row re-checked once the lock is granted, but not the outer-joined
# state, so a first write that committed meanwhile is not seen; the write then
# runs again (``RetryTransaction``) and sees it.
_INSERT = insert_per_dialect(
    lambda insert: (
        insert(working_memory)
        .values({c.name: bindparam(c.name) for c in working_memory.columns})
        .on_conflict_do_nothing()
    )
)
_UPDATE = Statement(
    update(working_memory)
    .where(_w.conversation_pk == bindparam("pk"), _w.user_id == bindparam("user_id"))
    .values(
        summary=bindparam("summary"),
        recent_json=bindparam("recent_json"),
        etag=bindparam("etag"),
        updated_at=bindparam("updated_at"),
    )
)


def get(conn: Connection, key: ConversationKey) -> MemoryState:
    """The state, or an empty one if never written."""
    found = _GET.first(
        conn,
        user_id=key.user_id,
        conversation_id=key.conversation_id,
        now=convert.now_micros(),
    )
    return convert.memory_state(found)


def _locked(
    tx: Tx, caller: Caller | None, key: ConversationKey, now: int
) -> tuple[Any, list[NewChange]]:
    """The locked conversation's key and state columns (``state_pk`` ``None``:
    never written), and the change of the conversation if this call created it."""
    params = {"user_id": key.user_id, "conversation_id": key.conversation_id, "now": now}
    found = _LOCK.first(tx, **params)
    if found is not None:
        return found, []
    conversation, created = conversation_rows.create_for_write(
        tx, caller, key.user_id, key.conversation_id, metadata={}, now=now
    )
    found = _LOCK.one(tx, **params)
    return found, conversation_rows.created_changes(conversation, created)


def _write(
    tx: Tx,
    caller: Caller | None,
    key: ConversationKey,
    summary: str | None,
    recent: Callable[[tuple[Exchange, ...]], tuple[Exchange, ...]],
    expected_etag: str | None,
) -> MemoryState:
    """Lock, check the etag, store ``summary`` (None: keep) and
    ``recent(old recent)``, append the changes; the state after."""
    now = convert.now_micros()
    found, feed = _locked(tx, caller, key, now)
    before = convert.memory_state(found if found.state_pk is not None else None)
    convert.check_etag(expected_etag, before.etag, memory_state_name(key))
    # The state after is what is written (nothing is read back).
    after = MemoryState(
        summary=before.summary if summary is None else summary,
        recent=recent(before.recent),
        etag=convert.new_etag(),
        update_time=convert.to_datetime(now),
    )
    values = {
        "pk": found.pk,
        "user_id": key.user_id,
        "summary": after.summary,
        "recent_json": codec.dumps(after.recent, tx.memo),
        "etag": after.etag,
        "updated_at": now,
    }
    if found.state_pk is None:
        values["conversation_pk"] = values.pop("pk")
        if not _INSERT[tx.dialect].execute(tx, **values):
            raise RetryTransaction("the state was created by a write that committed meanwhile")
    else:
        _UPDATE.execute(tx, **values)
    feed.append(change_log.memory_state_upserted(key, after))
    change_log.append(tx, key.user_id, feed)
    return after


@unit(SaveMemoryState)
def save(tx: Tx, command: SaveMemoryState) -> MemoryState:
    """Replace the whole state. Raises ``Aborted(ETAG_MISMATCH)``."""
    return _write(
        tx,
        command.caller,
        command.key,
        command.summary,
        lambda _old: command.recent,
        command.expected_etag,
    )


@unit(RememberExchange)
def remember(tx: Tx, command: RememberExchange) -> RememberResult:
    """Append the exchange, keep the newest ``keep_recent``, return the
    evicted ones. Raises ``Aborted(ETAG_MISMATCH)``."""
    evicted: tuple[Exchange, ...] = ()

    def slide(old: tuple[Exchange, ...]) -> tuple[Exchange, ...]:
        nonlocal evicted
        kept, evicted = window(old, command.exchange, command.keep_recent)
        return kept

    after = _write(tx, command.caller, command.key, command.summary, slide, command.expected_etag)
    return RememberResult(state=after, evicted=evicted)


@unit(ClearMemoryState)
def clear(tx: Tx, command: ClearMemoryState) -> MemoryState:
    """Empty the state (new etag) and strip the earlier states from the change
    feed; records ``memory_cleared``. Raises ``Aborted(ETAG_MISMATCH)`` (and
    then changes nothing: the write rolls back)."""
    key = command.key
    name = memory_state_name(key)
    change_log.strip_states(tx.conn, key.user_id, [name])
    cleared = _write(tx, command.caller, key, "", lambda _old: (), command.expected_etag)
    event_log.record(tx, command.caller, key.user_id, events.cleared("working_memory", name))
    return cleared
