"""The housekeeping loops' shared parts: draining in batches, and a loop that
survives a failed round and ends when the server stops."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mnemo_server.runtime.periodic import drain, repeat_until_stopped


async def test_drain_calls_until_a_short_batch_and_counts_everything() -> None:
    left = 25
    asked: list[int] = []

    async def delete_batch(limit: int) -> int:
        nonlocal left
        asked.append(limit)
        deleted = min(limit, left)
        left -= deleted
        return deleted

    assert await drain(delete_batch, 10) == 25
    assert asked == [10, 10, 10]
    assert await drain(delete_batch, 10) == 0


async def test_a_failed_round_is_logged_and_the_next_one_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stopping = asyncio.Event()
    rounds = 0

    async def round_() -> str:
        nonlocal rounds
        rounds += 1
        if rounds == 1:
            raise RuntimeError("database away")
        if rounds == 3:
            stopping.set()
        return f"round {rounds}"

    with caplog.at_level(logging.INFO, logger="mnemo_server.runtime.periodic"):
        await asyncio.wait_for(repeat_until_stopped(round_, 0.001, stopping, "tidying"), 10)
    assert rounds == 3
    messages = [record.getMessage() for record in caplog.records]
    assert messages == ["tidying failed", "round 2", "round 3"]
    assert caplog.records[0].exc_info is not None


async def test_a_set_event_ends_the_wait_between_rounds_at_once() -> None:
    stopping = asyncio.Event()

    async def round_() -> str:
        stopping.set()
        return ""

    # An interval far longer than the test's bound: only the event can end the wait.
    await asyncio.wait_for(repeat_until_stopped(round_, 3600, stopping, "tidying"), 10)
