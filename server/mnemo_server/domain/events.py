"""What each memory operation records as analytics events (gecx-chat
"Analytics"): pure builders of ``NewEvent`` lists, which the store records in
the operation's own transaction (``store.governance.events.record``).

Attribute values are strings; resource names say what an event is about
(``memory``, ``candidate``, ``name`` of the cleared working memory or
conversation).

Every event of a call made by one principal for another user (a credential
with the admin role, such as a service, acting for a user of its tenant)
also names the acting principal: attribute ``actor``, the ``sub`` of its
token (``attributed``, applied where events are recorded:
``store.governance.events.record``). A user's calls for themself, and calls under
``--auth none`` (no principal), carry no ``actor``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from mnemo_server.domain.governance import ConsentState, EventType, NewEvent
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import Memory
from mnemo_server.domain.names import memory_name

ACTOR = "actor"
"""The attribute naming the principal that acted for the event's user."""


def attributed(new: Sequence[NewEvent], caller: Caller | None, user_id: str) -> Sequence[NewEvent]:
    """``new`` with ``actor`` = ``caller``'s user id when ``caller`` acts for
    another user than itself; ``new`` unchanged otherwise."""
    if caller is None or caller.user_id == user_id:
        return new
    return [replace(e, attributes={**e.attributes, ACTOR: caller.user_id}) for e in new]


def saved(memories: Iterable[Memory], **extra: str) -> list[NewEvent]:
    """``memory_saved`` per entry: ``memory``, ``key``, ``source`` (and ``extra``)."""
    return [
        NewEvent(
            EventType.MEMORY_SAVED,
            {
                "memory": memory_name(m.user_id, m.memory_id),
                "key": m.key,
                "source": m.source.value,
                **extra,
            },
        )
        for m in memories
    ]


def deleted(user_id: str, memory_id: str, key: str) -> list[NewEvent]:
    return [
        NewEvent(EventType.MEMORY_DELETED, {"memory": memory_name(user_id, memory_id), "key": key})
    ]


def cleared(what: str, name: str) -> list[NewEvent]:
    """``memory_cleared``: ``what`` is ``working_memory`` or ``history``;
    ``name`` the memory state's or the conversation's name."""
    return [NewEvent(EventType.MEMORY_CLEARED, {"cleared": what, "name": name})]


def proposed(count: int) -> list[NewEvent]:
    return [NewEvent(EventType.MEMORY_EXTRACTION_PROPOSED, {"count": str(count)})]


def resolved(resolution: str, candidate: str, memory: str = "") -> list[NewEvent]:
    """``memory_extraction_resolved``: ``resolution`` approved or rejected."""
    attributes = {"resolution": resolution, "candidate": candidate}
    if memory:
        attributes["memory"] = memory
    return [NewEvent(EventType.MEMORY_EXTRACTION_RESOLVED, attributes)]


def consent_changed(state: ConsentState, policy_version: str, cancelled: int) -> list[NewEvent]:
    """``memory_consent_changed``: ``state`` granted or withdrawn, the
    ``policy_version``, and the pending candidates a withdrawal cancelled."""
    attributes = {
        "state": state.value,
        "policy_version": policy_version,
        "cancelled_candidates": str(cancelled),
    }
    return [NewEvent(EventType.MEMORY_CONSENT_CHANGED, attributes)]


def recalled(count: int, mode: str, semantic: bool) -> list[NewEvent]:
    """``memory_recalled``: ``mode`` recall (RecallMemories) or inject (BuildContext)."""
    attributes = {"count": str(count), "mode": mode, "semantic": str(semantic).lower()}
    return [NewEvent(EventType.MEMORY_RECALLED, attributes)]
