"""Keyed chains on the event-time axis: where a keyed save belongs.

A keyed chain is every entry of one (user, scope, conversation, key). Each
entry was valid from its ``event_at`` until ``valid_until`` (the event time
of the entry that superseded it; ``NULL``: still valid). Supersession
follows event time, not arrival order: a save with event time ``E``

- ends the validity of its *predecessor* (the entry of the greatest event
  time at or before ``E`` whose validity reaches past ``E``) at ``E``,
  archiving it if it was the live entry;
- is valid until the event time of its *successor* (the entry with the
  smallest event time after ``E``), and is then saved already archived (a
  historical version: ``SaveOutcome.HISTORICAL``); without a successor it is
  the live entry.

The live entry therefore always has the greatest event time of its chain,
and the validity intervals of a chain never overlap. Equal event times:
the later save supersedes. A deleted entry leaves the chain with its data
(privacy first): the entries it superseded keep the validity they had, so
the chain shows no fact for the time the deleted one covered.

The functions here keep no state: the caller (``writes.insert_entries``)
holds, for one write call, each chain's ``Link`` list: the stored entries
whose validity reaches past the earliest event time the call saves in it
(``stored_links``, read once per chain, through ``ix_memories_key_event``),
to which ``place`` adds the call's own drafts; ``write_stored`` then writes
the stored links whose validity changed. The common case (a save newer than
the live entry, its chain saved once in the call) never reads the chain: one
``UPDATE`` archives the live entry if its event time is not later
(``archive_older_live``); only when that archives nothing are the links read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Row, or_, select, update

from mnemo_server.store.rows import new_etag
from mnemo_server.store.schema import memories

Chain = tuple[str, str, str]
"""(scope, conversation id, key)."""


@dataclass
class Link:
    """An entry of a chain as supersession sees it: a stored row (``pk``) or
    draft ``draft`` of the call. ``archived_at`` is set when this call
    archives it (a live entry, or a draft saved historical: ``historical``);
    ``touched`` when its validity changed."""

    event: int
    valid_until: int | None
    live: bool
    pk: int | None = None
    memory_id: str = ""
    fingerprint: str = ""
    draft: int | None = None
    archived_at: int | None = None
    touched: bool = False
    historical: bool = False


@dataclass
class Placement:
    """Where draft ``draft`` went (its ``link``: live, or historical) and
    the live links it archived."""

    link: Link
    archived: list[Link] = field(default_factory=list)


def archive_older_live(
    conn: Connection, user_id: str, chain: Chain, event: int, now: int
) -> list[Row[Any]]:
    """Archive the live entry of ``chain`` if its event time is at or before
    ``event`` (its validity ends at ``event``); the archived rows."""
    scope, conversation_id, key = chain
    found = conn.execute(
        update(memories)
        .where(
            memories.c.user_id == user_id,
            memories.c.scope == scope,
            memories.c.conversation_id == conversation_id,
            memories.c.key == key,
            memories.c.archived_at.is_(None),
            memories.c.event_at <= event,
        )
        .values(archived_at=now, valid_until=event, etag=new_etag())
        .returning(*memories.c)
    ).all()
    return list(found)


def stored_links(conn: Connection, user_id: str, chain: Chain, since: int) -> list[Link]:
    """The stored entries of ``chain`` whose validity reaches past ``since``
    (the live one, those valid past it, those with a later event time)."""
    scope, conversation_id, key = chain
    found = conn.execute(
        select(
            memories.c.id,
            memories.c.memory_id,
            memories.c.event_at,
            memories.c.valid_until,
            memories.c.archived_at,
            memories.c.fingerprint,
        )
        .where(
            memories.c.user_id == user_id,
            memories.c.scope == scope,
            memories.c.conversation_id == conversation_id,
            memories.c.key == key,
            or_(
                memories.c.valid_until.is_(None),
                memories.c.valid_until > since,
                memories.c.event_at > since,
            ),
        )
        .order_by(memories.c.event_at, memories.c.id)
    ).all()
    return [
        Link(
            row.event_at,
            row.valid_until,
            row.archived_at is None,
            row.id,
            row.memory_id,
            row.fingerprint,
        )
        for row in found
    ]


def _neighbours(links: Sequence[Link], event: int) -> tuple[Link | None, Link | None]:
    """The predecessor and the successor of event time ``event`` in a chain."""
    successor: Link | None = None
    predecessor: Link | None = None
    for link in links:  # in save order: the later of equals wins
        if link.event > event:
            if successor is None or link.event < successor.event:
                successor = link
        elif link.valid_until is None or link.valid_until > event:
            if predecessor is None or link.event >= predecessor.event:
                predecessor = link
    return predecessor, successor


def link_true_at(links: Sequence[Link], event: int) -> Link | None:
    """The link whose fact was true at ``event`` (its predecessor), if any:
    a keyed save identical to it repeats it (``SaveOutcome.DUPLICATE``)."""
    return _neighbours(links, event)[0]


def place(links: list[Link], draft: int, event: int, now: int, fingerprint: str = "") -> Placement:
    """Add draft ``draft`` (event time ``event``, saved at ``now``) to a
    chain's ``links`` (see the module doc); what happened to it and which
    live links it archived."""
    predecessor, successor = _neighbours(links, event)
    link = Link(event, None, successor is None, draft=draft, fingerprint=fingerprint)
    if successor is not None:
        link.valid_until, link.archived_at, link.historical = successor.event, now, True
    placed = Placement(link)
    if predecessor is not None:
        predecessor.valid_until, predecessor.touched = event, True
        if predecessor.live:
            predecessor.live, predecessor.archived_at = False, now
            placed.archived.append(predecessor)
    links.append(link)
    return placed


def archived_pks(links: Sequence[Link]) -> set[int]:
    """The stored links this call archived (live before it)."""
    return {link.pk for link in links if link.pk is not None and link.archived_at is not None}


def write_stored(conn: Connection, user_id: str, links: Sequence[Link]) -> list[Row[Any]]:
    """Write the changed validity (and archive time) of the stored
    ``links`` this call touched; the rows as they are now."""
    changed: list[Row[Any]] = []
    for link in links:
        if link.pk is None or not link.touched:
            continue
        values: dict[str, Any] = {"valid_until": link.valid_until, "etag": new_etag()}
        if link.archived_at is not None:
            values["archived_at"] = link.archived_at
        changed += conn.execute(
            update(memories)
            .where(memories.c.user_id == user_id, memories.c.id == link.pk)
            .values(**values)
            .returning(*memories.c)
        ).all()
    return changed
