"""Consent, the memory switch and the memory gate, in SQL.

``check_memory_gate`` is THE gate of every memory write: each write unit of
work calls it right after ``sql_memories.lock_user``, inside its own
transaction, so a write racing a withdrawal cannot land after the withdrawal
commits:

- PostgreSQL (writes in READ COMMITTED): the gate locks the user's ``users``
  row ``FOR SHARE``, then reads ``user_settings`` in a new statement (a new
  snapshot); ``set_consent`` and ``update_settings`` lock that row ``FOR
  UPDATE`` before changing ``user_settings``. A write whose gate ran first
  commits before the withdrawal can take its lock (so the withdrawal's update
  time is later than the write's); a write arriving later waits for the
  withdrawal and then sees it.
- SQLite: writers are serialized (``BEGIN IMMEDIATE``).

Reads of entries and candidates call it with ``write=False`` (no lock: they
run in read-only transactions); recall and inject read ``gate_inputs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, insert, select, update

from mnemo_server.domain import events
from mnemo_server.domain.errors import etag_mismatch
from mnemo_server.domain.governance import (
    Access,
    Consent,
    ConsentChange,
    ConsentState,
    GateInputs,
    MemorySettings,
    closed_gate,
    gate_error,
    memory_settings_name,
)
from mnemo_server.domain.memory_models import CandidateState, MemoryCandidate
from mnemo_server.store import sql_changes, sql_events
from mnemo_server.store.convert import new_etag, now_micros, to_datetime
from mnemo_server.store.memory_convert import candidate
from mnemo_server.store.schema import conversations, memory_candidates, user_settings, users
from mnemo_server.store.sql_users import ensure_user

T = TypeVar("T")

__all__ = [
    "check_memory_gate",
    "gate_inputs",
    "gated_read",
    "get_consent",
    "get_settings",
    "set_consent",
    "update_settings",
]


def _lock_user_row(conn: Connection, user_id: str, *, exclusive: bool) -> None:
    """``SELECT ... FOR SHARE`` (``FOR UPDATE``) of the user's row (a no-op on SQLite)."""
    conn.execute(
        select(users.c.user_id)
        .where(users.c.user_id == user_id)
        .with_for_update(read=not exclusive)
    ).one_or_none()


def _settings(conn: Connection, user_id: str) -> Row[Any] | None:
    return conn.execute(
        select(user_settings).where(user_settings.c.user_id == user_id)
    ).one_or_none()


def _temporary_among(conn: Connection, user_id: str, conversation_ids: Iterable[str]) -> str:
    """The first of ``conversation_ids`` that is a temporary conversation of
    the user (expired or not), or ``""``."""
    wanted = sorted({c for c in conversation_ids if c})
    if not wanted:
        return ""
    found = conn.execute(
        select(conversations.c.conversation_id)
        .where(
            conversations.c.user_id == user_id,
            conversations.c.conversation_id.in_(wanted),
            conversations.c.temporary.is_(True),
        )
        .order_by(conversations.c.conversation_id)
        .limit(1)
    ).scalar_one_or_none()
    return found or ""


def gate_inputs(
    conn: Connection, user_id: str, conversation_ids: Iterable[str] = (), *, lock: bool = False
) -> GateInputs:
    """What the gates of ``user_id`` decide on; ``lock``: take the user's row
    ``FOR SHARE`` first (write transactions only)."""
    if lock:
        _lock_user_row(conn, user_id, exclusive=False)
    row = _settings(conn, user_id)
    withdrawn = row is not None and row.consent_state == ConsentState.WITHDRAWN.value
    enabled = row is None or bool(row.memory_enabled)
    temporary = "" if withdrawn else _temporary_among(conn, user_id, conversation_ids)
    return GateInputs(withdrawn=withdrawn, enabled=enabled, temporary_conversation=temporary)


def check_memory_gate(
    conn: Connection, user_id: str, conversation_ids: Iterable[str] = (), *, write: bool
) -> None:
    """Raise the strongest closed gate's ``FailedPrecondition``
    (``MEMORY_CONSENT_WITHDRAWN``, ``TEMPORARY_CONVERSATION``,
    ``MEMORY_DISABLED``) for a memory write (``write``: every gate; the
    conversations the write names are checked for temporary ones) or a memory
    read (only the switch). In a write transaction, call it after
    ``sql_memories.lock_user`` (see the module doc)."""
    access = Access.WRITE if write else Access.READ
    inputs = gate_inputs(conn, user_id, conversation_ids if write else (), lock=write)
    gate = closed_gate(inputs, access)
    if gate is not None:
        raise gate_error(gate, user_id, inputs.temporary_conversation)


def gated_read(conn: Connection, user_id: str, read: Callable[[], T]) -> T:
    """``read()`` once the read gate is open (``check_memory_gate`` with
    ``write=False``: ``MEMORY_DISABLED``)."""
    check_memory_gate(conn, user_id, write=False)
    return read()


# ---------------------------------------------------------------- consent


def _consent(user_id: str, row: Row[Any] | None) -> Consent:
    if row is None or row.consent_updated_at is None:
        return Consent(user_id)
    return Consent(
        user_id,
        ConsentState(row.consent_state),
        row.policy_version,
        to_datetime(row.consent_updated_at),
    )


def _settings_of(user_id: str, row: Row[Any] | None) -> MemorySettings:
    if row is None or row.settings_updated_at is None:
        return MemorySettings(user_id)
    return MemorySettings(
        user_id, bool(row.memory_enabled), row.settings_etag, to_datetime(row.settings_updated_at)
    )


def get_consent(conn: Connection, user_id: str) -> Consent:
    """The stored consent; granted for a user who never set it."""
    return _consent(user_id, _settings(conn, user_id))


def get_settings(conn: Connection, user_id: str) -> MemorySettings:
    """The stored settings; enabled for a user who never set them."""
    return _settings_of(user_id, _settings(conn, user_id))


def _write_settings(
    conn: Connection, user_id: str, found: Row[Any] | None, **values: Any
) -> Row[Any]:
    if found is None:
        defaults: dict[str, Any] = {
            "consent_state": ConsentState.GRANTED.value,
            "policy_version": "",
            "consent_updated_at": None,
            "memory_enabled": True,
            "settings_etag": "",
            "settings_updated_at": None,
        }
        statement: Any = insert(user_settings).values(user_id=user_id, **(defaults | values))
    else:
        statement = update(user_settings).where(user_settings.c.user_id == user_id).values(**values)
    return conn.execute(statement.returning(*user_settings.c)).one()


def _locked_settings(conn: Connection, user_id: str) -> Row[Any] | None:
    """Create the user if needed, lock its row ``FOR UPDATE``, read its settings."""
    ensure_user(conn, user_id, now_micros())
    _lock_user_row(conn, user_id, exclusive=True)
    return _settings(conn, user_id)


def _cancel_pending(conn: Connection, user_id: str, now: int) -> list[MemoryCandidate]:
    cancelled = conn.execute(
        update(memory_candidates)
        .where(
            memory_candidates.c.user_id == user_id,
            memory_candidates.c.state == CandidateState.PENDING.value,
        )
        .values(state=CandidateState.CANCELLED.value, resolved_at=now)
        .returning(*memory_candidates.c)
    ).all()
    return [candidate(row) for row in cancelled]


def set_consent(
    conn: Connection, user_id: str, state: ConsentState, policy_version: str
) -> ConsentChange:
    """Store the consent. Withdrawing cancels every pending candidate; a
    change records ``memory_consent_changed``. Setting what is stored changes
    nothing (the update time stays)."""
    found = _locked_settings(conn, user_id)
    before = _consent(user_id, found)
    if before.update_time is not None and (before.state, before.policy_version) == (
        state,
        policy_version,
    ):
        return ConsentChange(before)
    # Taken under the lock: later than every memory write committed before.
    now = now_micros()
    row = _write_settings(
        conn,
        user_id,
        found,
        consent_state=state.value,
        policy_version=policy_version,
        consent_updated_at=now,
    )
    cancelled = _cancel_pending(conn, user_id, now) if state is ConsentState.WITHDRAWN else []
    sql_events.record(conn, user_id, events.consent_changed(state, policy_version, len(cancelled)))
    consent = _consent(user_id, row)
    feed = [sql_changes.consent_upserted(consent)]
    feed += [sql_changes.candidate_upserted(c) for c in cancelled]
    sql_changes.append(conn, user_id, feed)
    return ConsentChange(consent, len(cancelled))


def update_settings(
    conn: Connection, user_id: str, *, enabled: bool, expected_etag: str | None
) -> MemorySettings:
    """Store the memory switch (a new etag). Raises ``Aborted(ETAG_MISMATCH)``
    when ``expected_etag`` is set and not current (never-written settings
    have the etag ``""``)."""
    found = _locked_settings(conn, user_id)
    before = _settings_of(user_id, found)
    if expected_etag is not None and expected_etag != before.etag:
        raise etag_mismatch(memory_settings_name(user_id))
    row = _write_settings(
        conn,
        user_id,
        found,
        memory_enabled=enabled,
        settings_etag=new_etag(),
        settings_updated_at=now_micros(),
    )
    settings = _settings_of(user_id, row)
    sql_changes.append(conn, user_id, [sql_changes.settings_upserted(settings)])
    return settings
