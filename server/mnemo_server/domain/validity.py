"""Validity on the event-time axis, and the plan of a save call.

Keyed chains: a keyed chain is every entry of one (user, scope,
conversation, key). Each entry was valid from its event time until
``valid_until`` (the event time of the entry that superseded it; ``None``:
still valid). Supersession follows event time, not arrival order: a save
with event time ``E``

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

The plan (``plan_saves``) decides, without reading or writing anything,
what a call saving several drafts does, as saving them one at a time would:
which drafts state a fact already stated (``domain.sameness``: the same as a
live entry, near one, or the fact a chain held at the draft's event time),
where each keyed draft goes in its chain (``place``), and what it archives.
It works on what the store read for it:

- the live entries with the call's fingerprints (and, for the
  near-duplicate check, every live vector of the model);
- for a keyed draft alone in its chain in the call that is not a duplicate
  (``archive_first``), the live entry the store archived with one
  ``UPDATE`` when its event time is not later (the common case: a save
  newer than the live entry never reads its chain);
- each chain a draft needs placed in (``chains_to_read``): the stored
  entries whose validity reaches past the earliest event time the call
  saves in it (``Link``).

Which chains the plan needs follows from the first read alone: a keyed
draft is compared only with entries of its own chain, which only the
call's drafts of that chain change, and a duplicate changes nothing; so a
chain's first draft that is no duplicate of what was read is its first that
is no duplicate at its turn. The plan reuses those answers (``found_for``)
for each keyed draft until a draft of its chain is stored, so that no draft
is compared with the live vectors more often than once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from mnemo_server.domain.memory_models import MemoryDraft
from mnemo_server.domain.sameness import (
    LiveEntry,
    UnitVector,
    first_same,
    nearest_same,
)

__all__ = [
    "Chain",
    "Found",
    "Link",
    "Placement",
    "Save",
    "SaveCall",
    "SavePlan",
    "archive_first",
    "archived_pks",
    "chains_to_read",
    "link_true_at",
    "place",
    "plan_saves",
]

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


@dataclass(frozen=True)
class SaveCall:
    """A call saving ``drafts`` (with ids ``ids``, text fingerprints
    ``prints`` and event times ``events``, in microseconds) at ``now``:
    draft ``i`` is saved at ``now + i``. ``probes``: with the near-duplicate
    check, each draft's probe as a unit vector (``sameness.unit_vector``),
    and the check's ``threshold``; ``None`` without it."""

    ids: tuple[str, ...]
    drafts: tuple[MemoryDraft, ...]
    prints: tuple[str, ...]
    events: tuple[int, ...]
    now: int
    probes: tuple[UnitVector | None, ...] | None = None
    threshold: float = 1.0

    def chain(self, i: int) -> Chain:
        """Draft ``i``'s chain (meaningful for a keyed draft)."""
        draft = self.drafts[i]
        return (draft.scope.value, draft.conversation_id, draft.key)

    def keyed(self) -> Counter[Chain]:
        """How many drafts of the call each chain has."""
        return Counter(self.chain(i) for i, draft in enumerate(self.drafts) if draft.key)

    def since(self, chain: Chain) -> int:
        """The earliest event time the call saves in ``chain``."""
        return min(
            self.events[i]
            for i, draft in enumerate(self.drafts)
            if draft.key and self.chain(i) == chain
        )


@dataclass
class Found:
    """What the store read for a plan: the live entries with the call's
    fingerprints, newest first (``live``); with the near-duplicate check,
    every live entry with a vector of the model, newest first, with its unit
    vector (``pool``); for each draft of ``archive_first``, the ids of the
    live entries the store archived for it (``archived``); each chain of
    ``chains_to_read`` with its stored links, in event-time order
    (``stored``)."""

    live: Sequence[LiveEntry]
    pool: Sequence[tuple[LiveEntry, UnitVector]] = ()
    archived: Mapping[int, Sequence[str]] = field(default_factory=dict)
    stored: Mapping[Chain, Sequence[Link]] = field(default_factory=dict)
    # What each keyed draft duplicates in ``live`` and ``pool`` as read,
    # worked out once by ``found_for`` for the reads and the plan.
    keyed_same: Mapping[int, LiveEntry | None] = field(default_factory=dict, repr=False)


@dataclass
class Save:
    """Draft ``index``, stored: its ``link`` in its chain when the chain
    was read (``None``: a live entry), and the ids of the entries it
    archived."""

    index: int
    link: Link | None = None
    archived: tuple[str, ...] = ()

    @property
    def historical(self) -> bool:
        return self.link is not None and self.link.historical

    @property
    def live(self) -> bool:
        return self.link is None or self.link.live


@dataclass
class SavePlan:
    """What a save call does: the drafts that store nothing, with the id of
    the entry (or of the call's draft) stating their fact (``same_as``); the
    drafts stored, in order (``saves``); the stored links of every chain
    read, as the call leaves them (``stored``: those ``touched`` change)."""

    same_as: dict[int, str]
    saves: list[Save]
    stored: list[Link]


def _same(
    call: SaveCall,
    i: int,
    live: Sequence[LiveEntry],
    pool: Sequence[tuple[LiveEntry, UnitVector]],
    gone: set[str],
) -> LiveEntry | None:
    """The live entry draft ``i`` states the fact of, if any: the same
    text (``sameness.first_same``), else, with the check, a near vector."""
    draft = call.drafts[i]
    same = first_same(live, draft, call.prints[i], gone)
    if same is None and call.probes is not None:
        same = nearest_same(pool, draft, call.probes[i], call.threshold, gone)
    return same


def found_for(
    call: SaveCall,
    live: Sequence[LiveEntry],
    pool: Sequence[tuple[LiveEntry, UnitVector]] = (),
) -> Found:
    """What the store read first for ``call`` (``Found.live``,
    ``Found.pool``), with what each keyed draft duplicates in it
    (``Found.keyed_same``): also what it duplicates at its turn as long as
    no earlier draft of its chain was stored (see the module doc)."""
    same = {
        i: _same(call, i, live, pool, set()) for i, draft in enumerate(call.drafts) if draft.key
    }
    return Found(live, pool, keyed_same=same)


def archive_first(call: SaveCall, found: Found) -> list[int]:
    """The keyed drafts alone in their chain in the call that are no
    duplicate (of ``found.live`` and ``found.pool``): for each, the store
    archives the live entry of the chain when its event time is not later
    than the draft's, in one ``UPDATE``, and reads the chain only when that
    archives nothing."""
    keyed, same = call.keyed(), found.keyed_same
    return [i for i in same if keyed[call.chain(i)] == 1 and same[i] is None]


def chains_to_read(call: SaveCall, found: Found) -> list[Chain]:
    """The chains whose stored links the plan needs (``found.archived``
    filled in): each with a draft that is no duplicate of what was read
    and not placed by ``archive_first``'s ``UPDATE`` (see the module doc)."""
    keyed, same = call.keyed(), found.keyed_same
    needed: list[Chain] = []
    for i, draft in enumerate(call.drafts):
        chain = call.chain(i)
        if not draft.key or chain in needed:
            continue
        if keyed[chain] == 1:
            if i in found.archived and not found.archived[i]:
                needed.append(chain)
        elif same[i] is None:
            needed.append(chain)
    return needed


def _place(
    call: SaveCall, i: int, chains: dict[Chain, list[Link]]
) -> tuple[str | None, Link | None, list[str]]:
    """Place keyed draft ``i`` in its read chain: the id stating its fact
    when the chain held it at the draft's event time (a late save sent
    twice), else ``None``, its link, and the ids it archived."""
    chain = chains.get(call.chain(i))
    if chain is None:
        raise AssertionError(f"chain {call.chain(i)!r} was not read (chains_to_read)")
    event = call.events[i]
    then = link_true_at(chain, event)
    if then is not None and then.fingerprint == call.prints[i]:
        return (then.memory_id if then.draft is None else call.ids[then.draft]), None, []
    placed = place(chain, i, event, call.now + i, call.prints[i])
    ids = [
        call.ids[link.draft] if link.draft is not None else link.memory_id
        for link in placed.archived
    ]
    return None, placed.link, ids


def plan_saves(call: SaveCall, found: Found) -> SavePlan:
    """The plan of ``call`` given what the store ``found`` (see the module
    doc); pure: what ``found`` holds is left as it was."""
    live = list(found.live)
    pool = list(found.pool)
    chains = {chain: [replace(link) for link in links] for chain, links in found.stored.items()}
    gone: set[str] = set()  # live entries this call archived
    same_as: dict[int, str] = {}
    saves: list[Save] = []
    first = found.keyed_same
    changed: set[Chain] = set()  # the chains of the drafts stored so far
    for i, draft in enumerate(call.drafts):
        if draft.key and call.chain(i) not in changed:
            same = first[i]  # its chain is as read (module doc)
        else:
            same = _same(call, i, live, pool, gone)
        if same is not None:
            same_as[i] = same.memory_id
            continue
        link: Link | None = None
        archived = list(found.archived.get(i, ()))
        if draft.key and not archived:
            repeated, link, archived = _place(call, i, chains)
            if repeated is not None:
                same_as[i] = repeated
                continue
        gone.update(archived)
        save = Save(i, link, tuple(archived))
        saves.append(save)
        if draft.key:
            changed.add(call.chain(i))
        if save.live:
            entry = LiveEntry(
                call.ids[i], call.prints[i], draft.scope.value, draft.conversation_id, draft.key
            )
            live.insert(0, entry)
            probe = None if call.probes is None else call.probes[i]
            if probe is not None:
                pool.insert(0, (entry, probe))
    stored = [link for links in chains.values() for link in links if link.pk is not None]
    return SavePlan(same_as, saves, stored)
