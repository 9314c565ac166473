"""Consent, the memory switch and the memory gate, in SQL.

``open_memory_write`` is THE gate of every memory write: each write unit of
work calls it first, inside its own transaction, so a write racing a
withdrawal cannot land after the withdrawal commits. It also creates the
user's rows if needed and locks the user's ``memory_user_state`` row (the
memory writes of one user run one at a time):

- PostgreSQL (writes in READ COMMITTED): one statement locks the user's
  ``memory_user_state`` row ``FOR UPDATE`` and its ``users`` row ``FOR
  SHARE``, then a second statement (a new snapshot, taken after the locks)
  reads ``user_settings``; ``set_consent`` and ``update_settings`` lock the
  ``users`` row ``FOR UPDATE`` before changing ``user_settings``. A write
  whose gate ran first commits before the withdrawal can take its lock (so
  the withdrawal's update time is later than the write's); a write arriving
  later waits for the withdrawal and then sees it. (One joined statement
  would not do: rows of the joined table would come from the snapshot taken
  before the wait.)
- SQLite: writers are serialized (``BEGIN IMMEDIATE``): one statement reads
  the user, its lock row and its settings.

Reads of entries and candidates call ``check_read_gate`` (no lock: they run
in read-only transactions); recall and inject read ``gate_inputs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, bindparam, insert, select, text, update

from mnemo_server.domain import events
from mnemo_server.domain.commands.governance import SetConsent, UpdateMemorySettings
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
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import CandidateState, MemoryCandidate
from mnemo_server.store.engine.failures import RetryTransaction
from mnemo_server.store.engine.statements import Statement, insert_per_dialect
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.memories.rows import candidate
from mnemo_server.store.rows import check_etag, new_etag, now_micros, to_datetime
from mnemo_server.store.schema import (
    conversations,
    memory_candidates,
    memory_user_state,
    user_settings,
    users,
)
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit
from mnemo_server.store.users import check_tenant, ensure_user

T = TypeVar("T")

__all__ = [
    "MemoryLock",
    "check_read_gate",
    "check_write_gate",
    "gate_inputs",
    "gated",
    "get_consent",
    "get_decision",
    "get_settings",
    "lock_for_memory",
    "open_memory_write",
    "set_consent",
    "update_settings",
]

_s = user_settings.c
_GATE_COLUMNS = (_s.consent_state, _s.memory_enabled)
_SETTINGS = Statement(select(user_settings).where(_s.user_id == bindparam("user_id")))
_GATE = Statement(select(*_GATE_COLUMNS).where(_s.user_id == bindparam("user_id")))
_SQLITE_OPEN = Statement(
    select(users.c.tenant_id, memory_user_state.c.user_id.label("locked"), *_GATE_COLUMNS)
    .select_from(
        users.outerjoin(
            memory_user_state, memory_user_state.c.user_id == users.c.user_id
        ).outerjoin(user_settings, _s.user_id == users.c.user_id)
    )
    .where(users.c.user_id == bindparam("user_id"))
)
_PG_LOCK = text(
    "SELECT u.tenant_id FROM memory_user_state AS m JOIN users AS u ON u.user_id = m.user_id "
    "WHERE m.user_id = %(user_id)s FOR UPDATE OF m FOR SHARE OF u"
).text
_CREATE_LOCK_ROW = insert_per_dialect(
    lambda insert: (
        insert(memory_user_state)
        .values(user_id=bindparam("user_id"), vectors_version=bindparam("now"))
        .on_conflict_do_nothing()
    )
)
_LOCK_USER_ROW = Statement(
    select(users.c.user_id).where(users.c.user_id == bindparam("user_id")).with_for_update()
)


def _inputs(consent_state: str | None, memory_enabled: Any, temporary: str = "") -> GateInputs:
    withdrawn = consent_state == ConsentState.WITHDRAWN.value
    enabled = memory_enabled is None or bool(memory_enabled)
    return GateInputs(
        withdrawn=withdrawn, enabled=enabled, temporary_conversation="" if withdrawn else temporary
    )


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


@dataclass(frozen=True)
class MemoryLock:
    """What a memory write learned while locking its user (``lock_for_memory``)."""

    tenant_id: str
    consent_state: str | None
    memory_enabled: Any


def _locked_for_memory(tx: Tx, user_id: str) -> MemoryLock | None:
    """The user's tenant and gate columns with its rows locked (see the
    module doc), or ``None`` if its rows do not exist yet."""
    if tx.dialect == "postgresql":
        found = tx.raw.execute(_PG_LOCK, {"user_id": user_id}).fetchone()
        if found is None:
            return None
        settings = _GATE.first(tx, user_id=user_id)
        if settings is None:
            return MemoryLock(found[0], None, None)
        return MemoryLock(found[0], settings.consent_state, settings.memory_enabled)
    row = _SQLITE_OPEN.first(tx, user_id=user_id)
    if row is None or row.locked is None:
        return None
    return MemoryLock(row.tenant_id, row.consent_state, row.memory_enabled)


def lock_for_memory(tx: Tx, caller: Caller | None, user_id: str) -> MemoryLock:
    """Create the user's rows if needed and lock them (module doc). Raises
    ``NotFound`` for a user of another tenant than ``caller``'s."""
    found = _locked_for_memory(tx, user_id)
    if found is None:
        now = now_micros()
        ensure_user(tx, caller, user_id, now)
        # The counter starts at the current time, not 0: a user erased and then
        # recreated (``DeleteUserData``) never repeats a version that another
        # process's ``VectorCache`` may still hold for the erased vectors.
        _CREATE_LOCK_ROW[tx.dialect].execute(tx, user_id=user_id, now=now)
        found = _locked_for_memory(tx, user_id)
        if found is None:  # erased (DeleteUserData) while this write waited
            raise RetryTransaction()
    check_tenant(caller, user_id, found.tenant_id)
    return found


def check_write_gate(
    tx: Tx, lock: MemoryLock, user_id: str, conversation_ids: Iterable[str] = ()
) -> None:
    """Raise the strongest closed gate's ``FailedPrecondition`` for a memory
    write (``MEMORY_CONSENT_WITHDRAWN``, ``TEMPORARY_CONVERSATION`` for one of
    ``conversation_ids``, ``MEMORY_DISABLED``)."""
    withdrawn = lock.consent_state == ConsentState.WITHDRAWN.value
    temporary = "" if withdrawn else _temporary_among(tx.conn, user_id, conversation_ids)
    inputs = _inputs(lock.consent_state, lock.memory_enabled, temporary)
    closed = closed_gate(inputs, Access.WRITE)
    if closed is not None:
        raise gate_error(closed, user_id, inputs.temporary_conversation)


def open_memory_write(
    tx: Tx, caller: Caller | None, user_id: str, conversation_ids: Iterable[str] = ()
) -> str:
    """Begin a memory write of ``user_id``: ``lock_for_memory``, then
    ``check_write_gate``. Returns the user's tenant."""
    lock = lock_for_memory(tx, caller, user_id)
    check_write_gate(tx, lock, user_id, conversation_ids)
    return lock.tenant_id


def gate_inputs(conn: Connection, user_id: str, conversation_ids: Iterable[str] = ()) -> GateInputs:
    """What the gates of ``user_id`` decide on (a read)."""
    row = _GATE.first(conn, user_id=user_id)
    inputs = _inputs(None, None) if row is None else _inputs(row.consent_state, row.memory_enabled)
    if inputs.withdrawn:
        return inputs
    temporary = _temporary_among(conn, user_id, conversation_ids)
    return GateInputs(withdrawn=False, enabled=inputs.enabled, temporary_conversation=temporary)


def check_read_gate(conn: Connection, user_id: str) -> None:
    """Raise ``MEMORY_DISABLED`` when the user switched memory off (reads of
    entries and candidates)."""
    gate = closed_gate(gate_inputs(conn, user_id), Access.READ)
    if gate is not None:
        raise gate_error(gate, user_id)


def gated(user_id: str, read: Callable[[Connection], T]) -> Callable[[Connection], T]:
    """``read`` (a function of ``Database.read``) run once ``user_id``'s read
    gate is open (``check_read_gate``), in the same transaction."""

    def gated_read(conn: Connection) -> T:
        check_read_gate(conn, user_id)
        return read(conn)

    return gated_read


# ---------------------------------------------------------------- consent


def _consent(user_id: str, row: Any | None) -> Consent:
    if row is None or row.consent_updated_at is None:
        return Consent(user_id)
    return Consent(
        user_id,
        ConsentState(row.consent_state),
        row.policy_version,
        to_datetime(row.consent_updated_at),
    )


def _settings_of(user_id: str, row: Any | None) -> MemorySettings:
    if row is None or row.settings_updated_at is None:
        return MemorySettings(user_id)
    return MemorySettings(
        user_id, bool(row.memory_enabled), row.settings_etag, to_datetime(row.settings_updated_at)
    )


def _settings(conn: Connection | Tx, user_id: str) -> Any:
    return _SETTINGS.first(conn, user_id=user_id)


def get_consent(conn: Connection, user_id: str) -> Consent:
    """The stored consent; granted for a user who never set it."""
    return _consent(user_id, _settings(conn, user_id))


def get_settings(conn: Connection, user_id: str) -> MemorySettings:
    """The stored settings; enabled for a user who never set them."""
    return _settings_of(user_id, _settings(conn, user_id))


def get_decision(conn: Connection, user_id: str) -> tuple[Consent, MemorySettings] | None:
    """The stored consent and settings, or ``None`` if the user never set
    either (no ``user_settings`` row)."""
    row = _settings(conn, user_id)
    return None if row is None else (_consent(user_id, row), _settings_of(user_id, row))


def _write_settings(tx: Tx, user_id: str, found: Any | None, **values: Any) -> Row[Any]:
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
    return tx.conn.execute(statement.returning(*user_settings.c)).one()


def _locked_settings(tx: Tx, caller: Caller | None, user_id: str) -> Any | None:
    """Create the user if needed, lock its row ``FOR UPDATE``, read its settings."""
    ensure_user(tx, caller, user_id, now_micros())
    _LOCK_USER_ROW.first(tx, user_id=user_id)
    return _settings(tx, user_id)


def _cancel_pending(tx: Tx, user_id: str, now: int) -> list[MemoryCandidate]:
    cancelled = tx.conn.execute(
        update(memory_candidates)
        .where(
            memory_candidates.c.user_id == user_id,
            memory_candidates.c.state == CandidateState.PENDING.value,
        )
        .values(state=CandidateState.CANCELLED.value, resolved_at=now)
        .returning(*memory_candidates.c)
    ).all()
    return [candidate(row) for row in cancelled]


@unit(SetConsent)
def set_consent(tx: Tx, command: SetConsent) -> ConsentChange:
    """Store the consent. Withdrawing cancels every pending candidate; a
    change records ``memory_consent_changed``. Setting what is stored changes
    nothing (the update time stays)."""
    user_id, state, policy_version = command.user_id, command.state, command.policy_version
    found = _locked_settings(tx, command.caller, user_id)
    before = _consent(user_id, found)
    if before.update_time is not None and (before.state, before.policy_version) == (
        state,
        policy_version,
    ):
        return ConsentChange(before)
    # Taken under the lock: later than every memory write committed before.
    now = now_micros()
    row = _write_settings(
        tx,
        user_id,
        found,
        consent_state=state.value,
        policy_version=policy_version,
        consent_updated_at=now,
    )
    cancelled = _cancel_pending(tx, user_id, now) if state is ConsentState.WITHDRAWN else []
    event_log.record(
        tx, command.caller, user_id, events.consent_changed(state, policy_version, len(cancelled))
    )
    consent = _consent(user_id, row)
    feed = [change_log.consent_upserted(consent)]
    feed += [change_log.candidate_upserted(c) for c in cancelled]
    change_log.append(tx, user_id, feed)
    return ConsentChange(consent, len(cancelled))


@unit(UpdateMemorySettings)
def update_settings(tx: Tx, command: UpdateMemorySettings) -> MemorySettings:
    """Store the memory switch (a new etag). Raises ``Aborted(ETAG_MISMATCH)``
    when ``expected_etag`` is set and not current (never-written settings
    have the etag ``""``)."""
    user_id = command.user_id
    found = _locked_settings(tx, command.caller, user_id)
    before = _settings_of(user_id, found)
    check_etag(command.expected_etag, before.etag, memory_settings_name(user_id))
    row = _write_settings(
        tx,
        user_id,
        found,
        memory_enabled=command.enabled,
        settings_etag=new_etag(),
        settings_updated_at=now_micros(),
    )
    settings = _settings_of(user_id, row)
    change_log.append(tx, user_id, [change_log.settings_upserted(settings)])
    return settings
