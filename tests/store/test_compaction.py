"""Compaction conformance: snapshots, replace-prefix, stale revisions, and no
canonical message ever lost, on every backend."""

from __future__ import annotations

import pytest

from mnemo_server.domain.errors import Aborted, InvalidArgument, NotFound
from mnemo_server.domain.models import HistorySnapshot
from mnemo_server.store.composed import SqlStore
from tests.store.samples import idem, messages
from tests.store.writes import append_messages, clear_messages, replace_history_prefix


async def fill(history: SqlStore, *texts: str) -> None:
    await append_messages(history, "alice", "c1", messages(*texts), run_id="run")


async def compact(
    history: SqlStore, revision: str, count: int, summary: str, request_id: str = ""
) -> HistorySnapshot:
    return await replace_history_prefix(
        history,
        "alice",
        "c1",
        revision=revision,
        message_count=count,
        replacement=messages(summary),
        run_id="compactor",
        idempotency=idem(request_id, scope="ReplaceHistoryPrefix") if request_id else None,
    )


def texts(snapshot: HistorySnapshot) -> list[str]:
    return [m.text for m in snapshot.messages]


async def canonical(history: SqlStore) -> list[str]:
    page = await history.conversations.list_messages("alice", "c1", start_position=0, limit=1000)
    assert [m.position for m in page.items] == list(range(len(page.items)))
    return [m.text for m in page.items]


async def test_a_snapshot_of_an_uncompacted_history_is_the_history(
    history: SqlStore,
) -> None:
    await fill(history, "a", "b")
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    assert snapshot.revision != ""
    page = await history.conversations.list_messages("alice", "c1", start_position=0, limit=10)
    assert snapshot.messages == page.items
    with pytest.raises(NotFound):
        await history.conversations.snapshot_history("alice", "nope")


async def test_replace_prefix_changes_the_projection_and_keeps_every_canonical_message(
    history: SqlStore,
) -> None:
    await fill(history, "a", "b", "c", "d")
    before = await history.conversations.snapshot_history("alice", "c1")
    after = await compact(history, before.revision, 3, "summary of a-c")
    assert texts(after) == ["summary of a-c", "d"]
    replacement = after.messages[0]
    assert replacement.compacted and replacement.position == -1
    assert replacement.run_id == "compactor"
    assert after.messages[1].position == 3 and not after.messages[1].compacted
    assert after.revision != before.revision
    assert await history.conversations.snapshot_history("alice", "c1") == after
    assert await canonical(history) == ["a", "b", "c", "d"]


async def test_compacting_again_can_replace_part_of_the_previous_replacement(
    history: SqlStore,
) -> None:
    await fill(history, "a", "b", "c", "d")
    first = await compact(
        history, (await history.conversations.snapshot_history("alice", "c1")).revision, 2, "s1"
    )
    assert texts(first) == ["s1", "c", "d"]
    second = await compact(history, first.revision, 2, "s2")
    assert texts(second) == ["s2", "d"]
    third = await compact(history, second.revision, 1, "s3")
    assert texts(third) == ["s3", "d"]
    assert await canonical(history) == ["a", "b", "c", "d"]


async def test_a_revision_is_stale_after_another_compaction_and_changes_nothing(
    history: SqlStore,
) -> None:
    await fill(history, "a", "b", "c")
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    winner = await compact(history, snapshot.revision, 2, "winner")
    with pytest.raises(Aborted) as caught:
        await compact(history, snapshot.revision, 1, "loser")
    assert caught.value.reason == "REVISION_STALE"
    assert await history.conversations.snapshot_history("alice", "c1") == winner
    assert await canonical(history) == ["a", "b", "c"]


async def test_a_revision_is_stale_after_a_clear(history: SqlStore) -> None:
    await fill(history, "a", "b")
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    await clear_messages(history, "alice", "c1")
    await fill(history, "x", "y")
    with pytest.raises(Aborted) as caught:
        await compact(history, snapshot.revision, 1, "stale")
    assert caught.value.reason == "REVISION_STALE"
    assert texts(await history.conversations.snapshot_history("alice", "c1")) == ["x", "y"]


async def test_appends_after_a_snapshot_do_not_make_it_stale(history: SqlStore) -> None:
    await fill(history, "a", "b")
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    await fill(history, "c")
    after = await compact(history, snapshot.revision, 2, "summary")
    assert texts(after) == ["summary", "c"]
    await fill(history, "d")
    assert texts(await history.conversations.snapshot_history("alice", "c1")) == [
        "summary",
        "c",
        "d",
    ]
    assert await canonical(history) == ["a", "b", "c", "d"]


async def test_out_of_range_counts_and_foreign_revisions_are_invalid(
    history: SqlStore,
) -> None:
    await fill(history, "a", "b")
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    for count in (0, 3):
        with pytest.raises(InvalidArgument):
            await compact(history, snapshot.revision, count, "x")
    with pytest.raises(InvalidArgument):
        await compact(history, "not-a-revision", 1, "x")
    assert await history.conversations.snapshot_history("alice", "c1") == snapshot


async def test_a_retried_compaction_returns_the_first_result(history: SqlStore) -> None:
    await fill(history, "a", "b", "c")
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    first = await compact(history, snapshot.revision, 2, "summary", request_id="compact-1")
    again = await compact(history, snapshot.revision, 2, "summary", request_id="compact-1")
    assert again == first
    assert await history.conversations.snapshot_history("alice", "c1") == first
