"""Building the inject context: top entries under a byte budget."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo_server.domain.inject import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRIES,
    HEADER,
    build_context,
    rendered_text,
)
from mnemo_server.domain.memory_models import Memory, RecallHit

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def hit(memory_id: str, text: str, *, pinned: bool = False, position: int = 1) -> RecallHit:
    memory = Memory(
        memory_id=memory_id,
        user_id="u1",
        text=text,
        create_time=T0,
        update_time=T0,
        pinned=pinned,
    )
    return RecallHit(memory=memory, score=1.0, rank=position, signals=())


def hits_of(*texts: str) -> list[RecallHit]:
    return [hit(f"m{i}", t, position=i + 1) for i, t in enumerate(texts)]


def test_defaults_are_the_documented_ones() -> None:
    assert (DEFAULT_MAX_ENTRIES, DEFAULT_MAX_BYTES) == (5, 1536)


def test_renders_a_header_and_one_line_per_entry() -> None:
    context = build_context(hits_of("The user is vegan.", "Lives in\n  Paris."))
    assert context.system_message == f"{HEADER}\n- The user is vegan.\n- Lives in Paris."
    assert context.memory_ids == ("m0", "m1")
    assert context.used_bytes == len("The user is vegan.") + len("Lives in Paris.")


def test_used_bytes_count_utf8_bytes_of_the_rendered_text() -> None:
    context = build_context(hits_of("Café ☕"))
    assert context.used_bytes == len("Café ☕".encode()) == 9


def test_nothing_applies_gives_an_empty_message() -> None:
    context = build_context([])
    assert (context.system_message, context.memory_ids, context.used_bytes) == ("", (), 0)
    assert build_context(hits_of("x" * 20), max_bytes=10).system_message == ""


def test_an_entry_that_does_not_fit_is_skipped_and_smaller_later_ones_still_fit() -> None:
    context = build_context(hits_of("a" * 6, "b" * 8, "c" * 4), max_bytes=10)
    assert context.memory_ids == ("m0", "m2")
    assert context.used_bytes == 10


def test_an_entry_exactly_filling_the_budget_is_taken() -> None:
    context = build_context(hits_of("a" * 10, "b"), max_bytes=10)
    assert context.memory_ids == ("m0",)
    assert context.used_bytes == 10


def test_max_entries_stops_selection_in_rank_order() -> None:
    context = build_context(hits_of(*(f"fact {i}" for i in range(9))), max_entries=3)
    assert context.memory_ids == ("m0", "m1", "m2")


def test_duplicate_texts_and_ids_are_used_once() -> None:
    hits = [*hits_of("Vegan.", "  Vegan. ", "Paris"), hit("m0", "other text")]
    context = build_context(hits)
    assert context.memory_ids == ("m0", "m2")


def test_pinned_first_puts_pinned_entries_before_the_others_in_rank_order() -> None:
    hits = [
        hit("a", "first", position=1),
        hit("b", "second pinned", pinned=True, position=2),
        hit("c", "third", position=3),
        hit("d", "fourth pinned", pinned=True, position=4),
    ]
    assert build_context(hits).memory_ids == ("a", "b", "c", "d")
    assert build_context(hits, pinned_first=True).memory_ids == ("b", "d", "a", "c")


@pytest.mark.parametrize(("entries", "budget"), [(0, 10), (-1, 10), (5, -1)])
def test_invalid_limits_raise(entries: int, budget: int) -> None:
    with pytest.raises(ValueError):
        build_context(hits_of("x"), max_entries=entries, max_bytes=budget)


def test_zero_budget_takes_nothing() -> None:
    assert build_context(hits_of("x"), max_bytes=0).memory_ids == ()


entry_text = st.text(min_size=1, max_size=300).filter(lambda t: bool(t.strip()))


@settings(max_examples=400, deadline=None)
@given(
    texts=st.lists(entry_text, max_size=30),
    pinned=st.lists(st.booleans(), min_size=30, max_size=30),
    max_entries=st.integers(1, 50),
    max_bytes=st.integers(0, 2000),
    pinned_first=st.booleans(),
)
def test_never_over_budget_and_deterministic(
    texts: list[str], pinned: list[bool], max_entries: int, max_bytes: int, pinned_first: bool
) -> None:
    texts = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
    hits = [hit(f"m{i}", t, pinned=pinned[i], position=i + 1) for i, t in enumerate(texts)]
    context = build_context(
        hits, max_entries=max_entries, max_bytes=max_bytes, pinned_first=pinned_first
    )
    assert context.used_bytes <= max_bytes
    assert len(context.memory_ids) <= max_entries
    assert len(set(context.memory_ids)) == len(context.memory_ids)
    by_id = {h.memory.memory_id: h for h in hits}
    rendered = [rendered_text(by_id[m].memory.text) for m in context.memory_ids]
    assert context.used_bytes == sum(len(r.encode("utf-8")) for r in rendered)
    if context.memory_ids:
        assert context.system_message == "\n".join([HEADER, *(f"- {r}" for r in rendered)])
    else:
        assert context.system_message == ""
    # Greedy: an entry was skipped only if the count was reached, it repeated
    # a taken text, or it did not fit in what was left when it was considered.
    considered = sorted(hits, key=lambda h: not h.memory.pinned) if pinned_first else hits
    taken = set(context.memory_ids)
    used, count, seen = 0, 0, set()
    for h in considered:
        line = rendered_text(h.memory.text)
        size = len(line.encode("utf-8"))
        if h.memory.memory_id in taken:
            used, count = used + size, count + 1
            seen.add(line)
        else:
            assert count == max_entries or line in seen or used + size > max_bytes
    again = build_context(
        list(hits), max_entries=max_entries, max_bytes=max_bytes, pinned_first=pinned_first
    )
    assert again == context
