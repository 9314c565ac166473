"""The plan of a save call (``domain.validity.plan_saves``), without a store.

The examples show the rules one by one; the property checks that the
reads the plan asks for (``archive_first``, ``chains_to_read``) and the
plan itself are what the interleaved loop that ``store.memories.writes``
ran before the plan was a pure function decided, read by read, on an
in-memory store that two calls in a row fill.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo_server.domain.memory_models import MemoryDraft, MemoryScope
from mnemo_server.domain.sameness import (
    LiveEntry,
    UnitVector,
    fingerprint,
    first_same,
    nearest_same,
    unit_vector,
)
from mnemo_server.domain.validity import (
    Chain,
    Link,
    Save,
    SaveCall,
    SavePlan,
    archive_first,
    chains_to_read,
    found_for,
    link_true_at,
    place,
    plan_saves,
)

NOW = 1_000_000


def call_of(*drafts: tuple[str, MemoryDraft, int], now: int = NOW) -> SaveCall:
    return SaveCall(
        ids=tuple(memory_id for memory_id, _, _ in drafts),
        drafts=tuple(draft for _, draft, _ in drafts),
        prints=tuple(fingerprint(draft.text) for _, draft, _ in drafts),
        events=tuple(event for _, _, event in drafts),
        now=now,
    )


def live(memory_id: str, text: str, key: str = "") -> LiveEntry:
    return LiveEntry(memory_id, fingerprint(text), MemoryScope.IDENTITY.value, "", key)


def test_a_new_fact_is_saved_live() -> None:
    call = call_of(("m1", MemoryDraft(text="Ada is vegan"), NOW))
    found = found_for(call, [])
    assert archive_first(call, found) == [] and chains_to_read(call, found) == []
    plan = plan_saves(call, found)
    assert plan.same_as == {} and [(s.index, s.live, s.archived) for s in plan.saves] == [
        (0, True, ())
    ]


def test_a_stated_fact_and_a_repeat_in_the_call_store_nothing() -> None:
    call = call_of(
        ("m1", MemoryDraft(text="Ada is vegan."), NOW),
        ("m2", MemoryDraft(text="Ada likes tea"), NOW + 1),
        ("m3", MemoryDraft(text="ada likes TEA!"), NOW + 2),
    )
    plan = plan_saves(call, found_for(call, [live("old", "ada is vegan")]))
    assert plan.same_as == {0: "old", 2: "m2"}
    assert [s.index for s in plan.saves] == [1]


def test_a_keyed_save_alone_in_its_chain_archives_with_one_update() -> None:
    call = call_of(("m2", MemoryDraft(text="Ada lives in Paris", key="city"), NOW))
    found = found_for(call, [])
    assert archive_first(call, found) == [0]
    found.archived = {0: ["m1"]}  # the UPDATE archived the live entry
    assert chains_to_read(call, found) == []
    (save,) = plan_saves(call, found).saves
    assert (save.archived, save.live, save.historical) == (("m1",), True, False)


def test_a_late_save_is_historical_and_its_repeat_a_duplicate() -> None:
    draft = MemoryDraft(text="Ada lived in Rome", key="city")
    call = call_of(("late", draft, 10), ("again", draft, 10))
    found = found_for(call, [])
    assert archive_first(call, found) == []  # two drafts of the chain: read it
    chain: Chain = (MemoryScope.IDENTITY.value, "", "city")
    assert chains_to_read(call, found) == [chain]
    stored = Link(20, None, True, pk=1, memory_id="now", fingerprint=fingerprint("Paris"))
    found.stored = {chain: [stored]}
    plan = plan_saves(call, found)
    (save,) = plan.saves
    assert save.historical and save.link is not None
    assert (save.link.valid_until, save.link.archived_at) == (20, NOW)
    assert plan.same_as == {1: "late"}
    assert stored.valid_until is None and not stored.touched  # found is left as it was
    assert plan.stored[0].touched is False


def test_a_near_vector_is_a_duplicate_with_the_check() -> None:
    entry = live("old", "Ada eats no meat")
    call = replace(
        call_of(("m1", MemoryDraft(text="Ada is vegan"), NOW)),
        probes=(unit_vector([1.0, 0.01]),),
        threshold=0.96,
    )
    vector = unit_vector([1.0, 0.0])
    assert vector is not None
    assert plan_saves(call, found_for(call, [], [(entry, vector)])).same_as == {0: "old"}
    far = unit_vector([0.0, 1.0])
    assert far is not None
    assert plan_saves(call, found_for(call, [], [(entry, far)])).same_as == {}


# ---------------------------------------------------------------- the property


@dataclass
class Row:
    pk: int
    memory_id: str
    chain: Chain
    fingerprint: str
    event: int
    valid_until: int | None
    live: bool
    vector: UnitVector | None = None


class Store:
    """The rows of one user, as the statements of ``store.memories`` see them."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.reads: list[tuple[str, object]] = []

    def pool(self) -> list[tuple[LiveEntry, UnitVector]]:
        return [
            (LiveEntry(r.memory_id, r.fingerprint, *r.chain), r.vector)
            for r in sorted(self.rows, key=lambda r: -r.pk)
            if r.live and r.vector is not None
        ]

    def live_with(self, prints: tuple[str, ...]) -> list[LiveEntry]:
        return [
            LiveEntry(r.memory_id, r.fingerprint, *r.chain)
            for r in sorted(self.rows, key=lambda r: -r.pk)
            if r.live and r.fingerprint in prints
        ]

    def archive_older_live(self, i: int, chain: Chain, event: int, now: int) -> list[str]:
        self.reads.append(("archive", i))
        found = [r for r in self.rows if r.chain == chain and r.live and r.event <= event]
        for r in found:
            r.live, r.valid_until = False, event
        return [r.memory_id for r in found]

    def stored_links(self, chain: Chain, since: int) -> list[Link]:
        self.reads.append(("chain", chain))
        found = [
            r
            for r in self.rows
            if r.chain == chain
            and (r.valid_until is None or r.valid_until > since or r.event > since)
        ]
        found.sort(key=lambda r: (r.event, r.pk))
        return [
            Link(r.event, r.valid_until, r.live, r.pk, r.memory_id, r.fingerprint) for r in found
        ]

    def write(self, call: SaveCall, plan: SavePlan) -> None:
        by_pk = {r.pk: r for r in self.rows}
        for link in plan.stored:
            if link.pk is not None and link.touched:
                row = by_pk[link.pk]
                row.valid_until = link.valid_until
                row.live = row.live and link.archived_at is None
        for save in plan.saves:
            i = save.index
            self.rows.append(
                Row(
                    len(self.rows) + 1,
                    call.ids[i],
                    call.chain(i),
                    call.prints[i],
                    call.events[i],
                    None if save.link is None else save.link.valid_until,
                    save.live,
                    None if call.probes is None else call.probes[i],
                )
            )


def planned(call: SaveCall, store: Store) -> SavePlan:
    """What ``writes.insert_entries`` does now: the reads, then the plan."""
    found = found_for(call, store.live_with(call.prints), store.pool() if call.probes else ())
    found.archived = {
        i: store.archive_older_live(i, call.chain(i), call.events[i], call.now + i)
        for i in archive_first(call, found)
    }
    found.stored = {
        chain: store.stored_links(chain, call.since(chain)) for chain in chains_to_read(call, found)
    }
    return plan_saves(call, found)


def interleaved(call: SaveCall, store: Store) -> SavePlan:
    """The loop ``writes.insert_entries`` ran before the plan (reads on demand)."""
    live = store.live_with(call.prints)
    pool = store.pool() if call.probes is not None else []
    keyed = Counter(call.chain(i) for i, d in enumerate(call.drafts) if d.key)
    loaded: dict[Chain, list[Link]] = {}
    links: dict[int, Link] = {}
    archived: list[list[str]] = [[] for _ in call.drafts]
    fast: list[list[str]] = [[] for _ in call.drafts]
    same_as: dict[int, str] = {}
    gone: set[str] = set()
    for i, draft in enumerate(call.drafts):
        same = first_same(live, draft, call.prints[i], gone)
        if same is None and call.probes is not None:
            same = nearest_same(pool, draft, call.probes[i], call.threshold, gone)
        if same is not None:
            same_as[i] = same.memory_id
            continue
        chain, event = call.chain(i), call.events[i]
        if draft.key and chain not in loaded and keyed[chain] == 1:
            fast[i] = store.archive_older_live(i, chain, event, call.now + i)
        if draft.key and not fast[i]:
            if chain not in loaded:
                loaded[chain] = store.stored_links(chain, call.since(chain))
            then = link_true_at(loaded[chain], event)
            if then is not None and then.fingerprint == call.prints[i]:
                same_as[i] = then.memory_id if then.draft is None else call.ids[then.draft]
                continue
            placed = place(loaded[chain], i, event, call.now + i, call.prints[i])
            links[i] = placed.link
            for link in placed.archived:
                archived[i].append(
                    call.ids[link.draft] if link.draft is not None else link.memory_id
                )
        archived[i] += fast[i]
        gone.update(archived[i])
        if i not in links or links[i].live:
            entry = LiveEntry(
                call.ids[i], call.prints[i], draft.scope.value, draft.conversation_id, draft.key
            )
            live.insert(0, entry)
            if call.probes is not None and call.probes[i] is not None:
                pool.insert(0, (entry, call.probes[i]))
    saves = [
        Save(i, links.get(i), tuple(archived[i]))
        for i in range(len(call.drafts))
        if i not in same_as
    ]
    stored = [link for chain in loaded.values() for link in chain if link.pk is not None]
    return SavePlan(same_as, saves, stored)


def summary(plan: SavePlan) -> object:
    return (
        plan.same_as,
        [
            (
                s.index,
                s.archived,
                s.live,
                s.historical,
                None if s.link is None else (s.link.valid_until, s.link.archived_at),
            )
            for s in plan.saves
        ],
        [(link.pk, link.valid_until, link.archived_at, link.touched) for link in plan.stored],
    )


Drafted = tuple[str, str, MemoryScope, str, int, int]
"""Text, key, scope, conversation, event time, probe (an index in ``PROBES``)."""

PROBES = ((1.0, 0.0), (0.0, 1.0), (1.0, 0.1), (1.0, 0.01), (0.0, 0.0))
"""Probe vectors: the third is not near the first (cosine 0.995 < 0.999),
the fourth is; the last has no direction."""

_draft = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["", "", "k1", "k2"]),
    st.sampled_from([MemoryScope.IDENTITY, MemoryScope.CONVERSATION]),
    st.sampled_from(["", "c1"]),
    st.integers(0, 6),
    st.integers(0, len(PROBES) - 1),
)


def _call(drafts: list[Drafted], name: str, now: int, near: bool) -> SaveCall:
    call = call_of(
        *(
            (
                f"{name}{i}",
                MemoryDraft(text=text, key=key, scope=scope, conversation_id=conv),
                event,
            )
            for i, (text, key, scope, conv, event, _) in enumerate(drafts)
        ),
        now=now,
    )
    if not near:
        return call
    probes = tuple(unit_vector(PROBES[probe]) for *_, probe in drafts)
    return replace(call, probes=probes, threshold=0.999)


@settings(max_examples=500, deadline=None)
@given(
    first=st.lists(_draft, max_size=6),
    second=st.lists(_draft, min_size=1, max_size=6),
    near=st.booleans(),
)
def test_the_plan_reads_and_decides_as_the_interleaved_loop_did(
    first: list[Drafted], second: list[Drafted], near: bool
) -> None:
    new, old = Store(), Store()
    for name, drafts, now in (("x", first, 100), ("y", second, 200)):
        call = _call(drafts, name, now, near)
        plan, expected = planned(call, new), interleaved(call, old)
        assert summary(plan) == summary(expected)
        # The same reads: the one-UPDATE archives, and the chains in the order read.
        assert sorted(r for r in new.reads if r[0] == "archive") == sorted(
            r for r in old.reads if r[0] == "archive"
        )
        assert [r for r in new.reads if r[0] == "chain"] == [
            r for r in old.reads if r[0] == "chain"
        ]
        new.write(call, plan)
        old.write(call, expected)
        new.reads.clear()
        old.reads.clear()
