"""``MnemoSaver``: LangGraph's checkpointer over Mnemo's ``CheckpointService``.

One line swaps it for ``InMemorySaver``, ``SqliteSaver`` or ``PostgresSaver``::

    from mnemo.client import AsyncMnemoClient, MnemoClient
    from mnemo.integrations.langgraph import MnemoSaver

    saver = MnemoSaver(MnemoClient(target), user="alice", async_client=AsyncMnemoClient(target))
    graph = builder.compile(checkpointer=saver)

or, owning its clients (as ``SqliteSaver.from_conn_string``)::

    with MnemoSaver.from_target(target, user="alice") as saver: ...        # sync methods
    async with MnemoSaver.afrom_target(target, user="alice") as saver: ... # both

Checkpoints are stored the way LangGraph's SQLite saver stores them: the
whole checkpoint as ``serde.dumps_typed`` bytes, the metadata as JSON, each
pending write as typed bytes under (task_id, idx), so what LangGraph saved
comes back byte for byte. Every LangGraph thread is a Mnemo thread of
``user`` (``users/{user}/threads/{thread_id}``): a thread id must be a Mnemo
id (1-128 of ``A-Z a-z 0-9 . _ ~ : -``, a uuid is one). The sync methods use
``client``, the async ones ``async_client`` (either may be omitted when that
half is not used).

Beyond the base methods it supports ``delete_for_runs``, ``copy_thread`` and
``prune`` (server-side, one call each). ``list`` needs a thread in
``config`` (the server lists one thread at a time). Errors are the client's
``mnemo.client.MnemoError`` subclasses, except that a missing checkpoint is
``None`` from ``get_tuple``, as from every LangGraph saver.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from mnemo.client import AsyncMnemoClient, MnemoClient, NotFoundError
from mnemo.v1 import checkpoints_pb2 as cp

__all__ = ["MnemoSaver"]

PAGE_SIZE = 100
"""Checkpoints per ``ListCheckpoints`` call."""
MAX_PER_CALL = 1000
"""Threads or run ids per call (the server's limit)."""


def _thread(config: RunnableConfig) -> str:
    return str(config["configurable"]["thread_id"])


def _ns(config: RunnableConfig) -> str:
    return str(config["configurable"].get("checkpoint_ns") or "")


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _chunks(values: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), MAX_PER_CALL):
        yield [str(v) for v in values[start : start + MAX_PER_CALL]]


class MnemoSaver(BaseCheckpointSaver[str]):  # type: ignore[misc]  # (Any where mypy runs: pyproject.toml)
    """A LangGraph checkpointer storing in Mnemo, under ``user``.

    Args:
        client: for the sync methods (``get_tuple``, ``put``, ...).
        user: the Mnemo user whose threads these are.
        async_client: for the async methods (``aget_tuple``, ``aput``, ...).
        serde: LangGraph's serializer (default: ``JsonPlusSerializer``).
    """

    def __init__(
        self,
        client: MnemoClient | None = None,
        *,
        user: str,
        async_client: AsyncMnemoClient | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._client = client
        self._async_client = async_client
        self.user = user

    @classmethod
    @contextmanager
    def from_target(
        cls, target: str, *, user: str, serde: SerializerProtocol | None = None, **options: Any
    ) -> Iterator[MnemoSaver]:
        """A saver with a ``MnemoClient(target, **options)`` of its own (sync
        methods only), closed on exit."""
        with MnemoClient(target, **options) as client:
            yield cls(client, user=user, serde=serde)

    @classmethod
    @asynccontextmanager
    async def afrom_target(
        cls, target: str, *, user: str, serde: SerializerProtocol | None = None, **options: Any
    ) -> AsyncIterator[MnemoSaver]:
        """A saver with a ``MnemoClient`` and an ``AsyncMnemoClient`` of its
        own (both halves), closed on exit."""
        with MnemoClient(target, **options) as client:
            async with AsyncMnemoClient(target, **options) as async_client:
                yield cls(client, user=user, async_client=async_client, serde=serde)

    @property
    def client(self) -> MnemoClient:
        if self._client is None:
            raise RuntimeError("MnemoSaver has no sync client: pass client=MnemoClient(...)")
        return self._client

    @property
    def async_client(self) -> AsyncMnemoClient:
        if self._async_client is None:
            raise RuntimeError(
                "MnemoSaver has no async client: pass async_client=AsyncMnemoClient(...)"
            )
        return self._async_client

    # ------------------------------------------------------------ conversions

    def _put_arguments(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> dict[str, Any]:
        type_, data = self.serde.dumps_typed(checkpoint)
        # As the SQLite saver: the metadata with the config's extra keys, as JSON
        # (ASCII-escaped: the server's text fields refuse lone surrogates).
        metadata_json = json.dumps(get_checkpoint_metadata(config, metadata))
        return {
            "checkpoint_id": checkpoint["id"],
            "type": type_,
            "checkpoint": data,
            "metadata_json": metadata_json,
            "checkpoint_ns": _ns(config),
            "parent_checkpoint_id": config["configurable"].get("checkpoint_id") or "",
        }

    def _writes(
        self, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> list[cp.PendingWrite]:
        made = []
        for idx, (channel, value) in enumerate(writes):
            type_, data = self.serde.dumps_typed(value)
            made.append(
                cp.PendingWrite(
                    task_id=task_id,
                    idx=WRITES_IDX_MAP.get(channel, idx),
                    channel=channel,
                    type=type_,
                    value=data,
                    task_path=task_path,
                )
            )
        return made

    def _tuple(self, thread_id: str, found: cp.Checkpoint) -> CheckpointTuple:
        ns = found.checkpoint_ns
        return CheckpointTuple(
            config=_config(thread_id, ns, found.checkpoint_id),
            checkpoint=self.serde.loads_typed((found.type, found.checkpoint)),
            metadata=cast(CheckpointMetadata, json.loads(found.metadata_json or "{}")),
            parent_config=(
                _config(thread_id, ns, found.parent_checkpoint_id)
                if found.parent_checkpoint_id
                else None
            ),
            pending_writes=[
                (w.task_id, w.channel, self.serde.loads_typed((w.type, w.value)))
                for w in found.pending_writes
            ],
        )

    @staticmethod
    def _list_arguments(
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> tuple[str, dict[str, Any]]:
        if config is None:
            raise ValueError("MnemoSaver.list needs a config with a thread_id")
        namespace = config["configurable"].get("checkpoint_ns")
        return _thread(config), {
            "checkpoint_ns": None if namespace is None else str(namespace),
            "metadata_filter": filter or {},
            "before_checkpoint_id": (get_checkpoint_id(before) if before else None) or "",
        }

    @staticmethod
    def _wanted(config: RunnableConfig, found: cp.Checkpoint) -> bool:
        """Whether ``found`` is the checkpoint ``config`` names (a list by id)."""
        checkpoint_id = get_checkpoint_id(config)
        return not checkpoint_id or found.checkpoint_id == checkpoint_id

    # -------------------------------------------------------------------- sync

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = _thread(config)
        try:
            found = self.client.get_checkpoint(
                self.user,
                thread_id,
                checkpoint_ns=_ns(config),
                checkpoint_id=get_checkpoint_id(config) or "",
            )
        except NotFoundError:
            return None
        return self._tuple(thread_id, found)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        thread_id, arguments = self._list_arguments(config, filter, before)
        assert config is not None
        remaining = limit
        while remaining is None or remaining > 0:
            size = PAGE_SIZE if remaining is None else min(remaining, PAGE_SIZE)
            page = self.client.list_checkpoints_page(
                self.user, thread_id, page_size=size, **arguments
            )
            for found in page.checkpoints:
                if self._wanted(config, found):
                    yield self._tuple(thread_id, found)
            if remaining is not None:
                remaining -= len(page.checkpoints)
            if not page.next_before_checkpoint_id:
                return
            arguments["before_checkpoint_id"] = page.next_before_checkpoint_id

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id = _thread(config)
        self.client.put_checkpoint(
            self.user, thread_id, **self._put_arguments(config, checkpoint, metadata)
        )
        return _config(thread_id, _ns(config), checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.client.put_checkpoint_writes(
            self.user,
            _thread(config),
            checkpoint_ns=_ns(config),
            checkpoint_id=str(config["configurable"]["checkpoint_id"]),
            writes=self._writes(writes, task_id, task_path),
        )

    def delete_thread(self, thread_id: str) -> None:
        self.client.delete_thread(self.user, str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        for chunk in _chunks(run_ids):
            self.client.delete_checkpoints_for_runs(self.user, chunk)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.client.copy_thread(self.user, str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for chunk in _chunks(thread_ids):
            self.client.prune_threads(self.user, chunk, strategy=cast(Any, strategy))

    # ------------------------------------------------------------------- async

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = _thread(config)
        try:
            found = await self.async_client.get_checkpoint(
                self.user,
                thread_id,
                checkpoint_ns=_ns(config),
                checkpoint_id=get_checkpoint_id(config) or "",
            )
        except NotFoundError:
            return None
        return self._tuple(thread_id, found)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        thread_id, arguments = self._list_arguments(config, filter, before)
        assert config is not None
        remaining = limit
        while remaining is None or remaining > 0:
            size = PAGE_SIZE if remaining is None else min(remaining, PAGE_SIZE)
            page = await self.async_client.list_checkpoints_page(
                self.user, thread_id, page_size=size, **arguments
            )
            for found in page.checkpoints:
                if self._wanted(config, found):
                    yield self._tuple(thread_id, found)
            if remaining is not None:
                remaining -= len(page.checkpoints)
            if not page.next_before_checkpoint_id:
                return
            arguments["before_checkpoint_id"] = page.next_before_checkpoint_id

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id = _thread(config)
        await self.async_client.put_checkpoint(
            self.user, thread_id, **self._put_arguments(config, checkpoint, metadata)
        )
        return _config(thread_id, _ns(config), checkpoint["id"])

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self.async_client.put_checkpoint_writes(
            self.user,
            _thread(config),
            checkpoint_ns=_ns(config),
            checkpoint_id=str(config["configurable"]["checkpoint_id"]),
            writes=self._writes(writes, task_id, task_path),
        )

    async def adelete_thread(self, thread_id: str) -> None:
        await self.async_client.delete_thread(self.user, str(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        for chunk in _chunks(run_ids):
            await self.async_client.delete_checkpoints_for_runs(self.user, chunk)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self.async_client.copy_thread(self.user, str(source_thread_id), str(target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for chunk in _chunks(thread_ids):
            await self.async_client.prune_threads(self.user, chunk, strategy=cast(Any, strategy))

    def get_next_version(self, current: str | int | None, channel: None) -> str:
        """The SQLite and PostgreSQL savers' versions: a zero-padded counter
        and a random fraction, so they sort as text."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"
