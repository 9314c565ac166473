"""Governance of memory (gecx-chat "Governance & user control", "Analytics"):
consent, the user's memory switch, the gates they close, and analytics events.

Three gates, strongest first (the first closed one is the answer):

1. consent withdrawn -> ``MEMORY_CONSENT_WITHDRAWN``;
2. a temporary conversation -> ``TEMPORARY_CONVERSATION``;
3. the user's switch off -> ``MEMORY_DISABLED``.

Which gates an operation passes through is its ``Access``: writes (save,
update, delete, extraction, proposals, approval) pass all three; reads of
entries and candidates only the switch; recall consent and the switch;
inject (``BuildContext``) all three. A closed gate refuses a write or a read
with ``FailedPrecondition`` (``GateClosed``); recall and inject return nothing
instead. A write repeated with the ``request_id`` of one that succeeded
passes the gates again: while one is closed it is refused like any other
write, not answered with the recorded result.
Switching memory on never lifts a withdrawn consent: the gates are checked
independently and consent comes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from mnemo_server.domain.errors import FailedPrecondition
from mnemo_server.domain.models import ConversationKey
from mnemo_server.domain.names import conversation_name, user_name


class ConsentState(StrEnum):
    """Whether the user consents to memory (the stored value)."""

    GRANTED = "granted"
    WITHDRAWN = "withdrawn"


@dataclass(frozen=True)
class Consent:
    """A user's consent; ``update_time`` ``None``: never set (granted)."""

    user_id: str
    state: ConsentState = ConsentState.GRANTED
    policy_version: str = ""
    update_time: datetime | None = None


@dataclass(frozen=True)
class ConsentChange:
    """What ``SetConsent`` stored and how many pending candidates it cancelled."""

    consent: Consent
    cancelled_candidates: int = 0


@dataclass(frozen=True)
class MemorySettings:
    """A user's memory settings; ``etag`` ``""``: never written (enabled)."""

    user_id: str
    enabled: bool = True
    etag: str = ""
    update_time: datetime | None = None


class Gate(StrEnum):
    """A closed gate; the value is the ``ErrorReason`` name."""

    CONSENT_WITHDRAWN = "MEMORY_CONSENT_WITHDRAWN"
    TEMPORARY_CONVERSATION = "TEMPORARY_CONVERSATION"
    MEMORY_DISABLED = "MEMORY_DISABLED"


class Access(StrEnum):
    """What an operation does with memory (which gates apply to it)."""

    WRITE = "write"
    READ = "read"
    RECALL = "recall"
    INJECT = "inject"


_APPLIES: dict[Access, tuple[Gate, ...]] = {
    Access.WRITE: (Gate.CONSENT_WITHDRAWN, Gate.TEMPORARY_CONVERSATION, Gate.MEMORY_DISABLED),
    Access.READ: (Gate.MEMORY_DISABLED,),
    Access.RECALL: (Gate.CONSENT_WITHDRAWN, Gate.MEMORY_DISABLED),
    Access.INJECT: (Gate.CONSENT_WITHDRAWN, Gate.TEMPORARY_CONVERSATION, Gate.MEMORY_DISABLED),
}


@dataclass(frozen=True)
class GateInputs:
    """What the gates are decided on: the user's consent and switch, and the
    temporary conversation the operation names (``""``: none)."""

    withdrawn: bool = False
    enabled: bool = True
    temporary_conversation: str = ""


def closed_gate(inputs: GateInputs, access: Access) -> Gate | None:
    """The strongest gate closed for ``access``, or ``None``."""
    closed = {
        Gate.CONSENT_WITHDRAWN: inputs.withdrawn,
        Gate.TEMPORARY_CONVERSATION: bool(inputs.temporary_conversation),
        Gate.MEMORY_DISABLED: not inputs.enabled,
    }
    return next((gate for gate in _APPLIES[access] if closed[gate]), None)


@dataclass
class GateClosed(FailedPrecondition):
    """A closed gate's refusal (``gate_error``): a ``FailedPrecondition`` that
    an idempotent replay never turns into the recorded result of the
    request's first call (``store.transactions.idempotency``), so that the
    gates apply to a replay as to any other write."""


def gate_error(gate: Gate, user_id: str, conversation_id: str = "") -> GateClosed:
    """The ``FailedPrecondition`` a closed gate answers."""
    user = user_name(user_id)
    if gate is Gate.CONSENT_WITHDRAWN:
        return GateClosed(
            f"{user} has withdrawn consent to memory: nothing can be saved, changed "
            "or extracted until consent is granted again (GovernanceService.SetConsent)",
            reason=gate.value,
            metadata={"user": user},
        )
    if gate is Gate.TEMPORARY_CONVERSATION:
        name = conversation_name(ConversationKey(user_id, conversation_id))
        return GateClosed(
            f"{name} is a temporary conversation: nothing is remembered from it",
            reason=gate.value,
            metadata={"user": user, "conversation": name},
        )
    return GateClosed(
        f"{user} has switched memory off: turn it on with "
        "GovernanceService.UpdateMemorySettings to read or write memories",
        reason=gate.value,
        metadata={"user": user},
    )


def consent_name(user_id: str) -> str:
    return f"{user_name(user_id)}/consent"


def memory_settings_name(user_id: str) -> str:
    return f"{user_name(user_id)}/memorySettings"


def event_name(user_id: str, event_id: str) -> str:
    return f"{user_name(user_id)}/events/{event_id}"


# ------------------------------------------------------------------ events


class EventType(StrEnum):
    """The analytics events the gecx-chat SDK names (the stored value)."""

    MEMORY_SAVED = "memory_saved"
    MEMORY_DELETED = "memory_deleted"
    MEMORY_CLEARED = "memory_cleared"
    MEMORY_RECALLED = "memory_recalled"
    MEMORY_EXTRACTION_PROPOSED = "memory_extraction_proposed"
    MEMORY_EXTRACTION_RESOLVED = "memory_extraction_resolved"
    MEMORY_CONSENT_CHANGED = "memory_consent_changed"


@dataclass(frozen=True)
class NewEvent:
    """An event about to be recorded for a user."""

    type: EventType
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    """A recorded event. ``sequence`` is the store's internal order (keysets)."""

    user_id: str
    tenant_id: str
    event_id: str
    type: EventType
    attributes: dict[str, str]
    create_time: datetime
    sequence: int = 0


@dataclass(frozen=True)
class EventScope:
    """Whose events: one user's (``user_id``) or a whole tenant's."""

    user_id: str | None = None
    tenant_id: str | None = None

    def __post_init__(self) -> None:
        if (self.user_id is None) == (self.tenant_id is None):
            raise ValueError("an event scope is one user or one tenant")
