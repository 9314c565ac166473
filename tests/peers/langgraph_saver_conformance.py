"""LangGraph's own checkpointer conformance suite against ``MnemoSaver``.

Runs ``langgraph.checkpoint.conformance.validate()`` (the pinned
``langgraph-checkpoint-conformance``) against ``InMemorySaver`` and
LangGraph's ``AsyncSqliteSaver`` (the controls: the suite passes for them)
and against ``MnemoSaver`` on the live server at ``MNEMO_TARGET``, each
capability suite on a fresh Mnemo user: once through its async methods
(what the suite calls) and once through its sync methods
(``SyncMnemoSaver``: the async methods run the sync ones in a thread).
Prints each saver's report and fails unless every base capability passes
for all of them and every capability ``MnemoSaver`` implements passes too.

Run by ``make test-langgraph`` in ``.venv-langgraph``, beside a server
started by ``tests.peers.with_mnemo_server``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from mnemo.client import AsyncMnemoClient, MnemoClient
from mnemo.integrations.langgraph import MnemoSaver

TARGET = os.environ.get("MNEMO_TARGET", "127.0.0.1:50051")
EXPECTED_EXTENDED = {"delete_for_runs", "copy_thread", "prune"}
"""The optional capabilities MnemoSaver implements (all of them)."""


@checkpointer_test(name="InMemorySaver")
async def memory_saver() -> AsyncIterator[InMemorySaver]:
    yield InMemorySaver()


@checkpointer_test(name="AsyncSqliteSaver")
async def sqlite_saver() -> AsyncIterator[AsyncSqliteSaver]:
    with tempfile.TemporaryDirectory(prefix="lg-sqlite-") as directory:
        async with AsyncSqliteSaver.from_conn_string(str(Path(directory) / "c.db")) as saver:
            yield saver


@checkpointer_test(name="MnemoSaver")
async def mnemo_saver() -> AsyncIterator[MnemoSaver]:
    user = f"conformance-{uuid.uuid4().hex[:12]}"
    with MnemoClient(TARGET) as client:
        async with AsyncMnemoClient(TARGET) as async_client:
            yield MnemoSaver(client, user=user, async_client=async_client)


class SyncMnemoSaver(MnemoSaver):
    """``MnemoSaver`` whose async methods run its sync ones (in a thread), so
    that the suite, which calls the async methods, checks the sync half."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


@checkpointer_test(name="MnemoSaver (sync methods)")
async def mnemo_sync_saver() -> AsyncIterator[MnemoSaver]:
    user = f"conformance-sync-{uuid.uuid4().hex[:12]}"
    with MnemoClient(TARGET) as client:
        yield SyncMnemoSaver(client, user=user)


def _problems(report: CapabilityReport, required: set[str]) -> list[str]:
    problems = []
    for name in sorted(required):
        result = report.results.get(name)
        if result is None or not result.detected:
            problems.append(f"{report.checkpointer_name}: {name} not implemented")
        elif not result.passed:
            problems.append(f"{report.checkpointer_name}: {name} failed: {result.failures}")
    return problems


async def main() -> int:
    base = {c.value for c in BASE_CAPABILITIES}
    problems: list[str] = []
    for registered, required in (
        (memory_saver, base),
        (sqlite_saver, base),
        (mnemo_saver, base | EXPECTED_EXTENDED),
        (mnemo_sync_saver, base | EXPECTED_EXTENDED),
    ):
        report = await validate(registered)
        report.print_report()
        for name, result in sorted(report.results.items()):
            print(
                f"{registered.name} {name}: detected={result.detected} passed={result.passed} "
                f"tests_passed={result.tests_passed} tests_failed={result.tests_failed}"
            )
        problems += _problems(report, required)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
