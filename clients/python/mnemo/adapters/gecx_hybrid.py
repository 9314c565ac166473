"""gecx-chat's hybrid memory adapter: Mnemo as the source of truth, a local SQLite cache.

gecx-chat's ``createHybridMemoryAdapter({ remote, cache })`` becomes::

    adapter = create_hybrid_memory_adapter(
        remote=create_server_memory_adapter(mnemo, user="u1"),
        cache=SqliteMemoryCache("memory-cache.db"),
        on_remote_failure="rollback",   # or "keep"
    )
    adapter.start()    # follow the change feed (a thread; asyncio: a task)

Writes are optimistic: the cache changes first, then the server is called
(with a client-chosen entry id and a request id, so sending it again later
never saves twice). A save carries its event time (``event_time``, else the
device's clock when it was made), so a save sent late keeps the time it was
said. When the server answers that the fact is already a live entry
(``"duplicate"``), the optimistic entry leaves the cache for the server's
(another id); a keyed save the server stored as an earlier version
(``"historical"``: a later fact of the key is current) puts back the entry
the cache had archived for it. When the server call fails:

- ``on_remote_failure="rollback"`` (gecx-chat's default): the cache is put
  back as it was and the error is raised;
- ``"keep"``: if the server could not be reached (``UNAVAILABLE``,
  ``DEADLINE_EXCEEDED``, ``RESOURCE_EXHAUSTED``), the optimistic write stays
  in the cache and is queued; ``sync()`` (run by the follower as soon as the
  server answers again, and before every later write) sends the queue in order.
  A refusal by the server (consent withdrawn, an invalid entry...) is rolled
  back and raised in both modes: sending it again would not help.

Reconciliation is server-wins: ``sync()`` and the follower apply the user's
change feed (``SyncService``) to the cache: a changed entry replaces the
cached one, a deleted one leaves it, ``ERASE`` (the user's data was erased)
empties the cache and the queue. A queued write the server refuses when sent
(the entry was changed or deleted elsewhere since) is dropped and the entry
re-read. A cursor the server no longer retains (``CURSOR_EXPIRED``) and a
cache never synced are resynced from a full list.

Reads never raise: ``list``, ``recall`` and ``get`` ask the server and fall
back to the cache (a local word-match recall) when it fails, and to nothing
when the cache cannot be read either, so a memory failure never blocks a send.
A governance refusal (``FAILED_PRECONDITION``: memory switched off, consent
withdrawn) reads as nothing, never as the cache: the gates hold offline too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import re
import sqlite3
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, overload

from mnemo.adapters._steps import Call, Steps, arun_steps, awaitable, blocking, run_steps
from mnemo.adapters.gecx import (
    AsyncServerMemoryAdapter,
    Entries,
    Hits,
    MemoryEntry,
    RecallHit,
    SaveResult,
    Scope,
    ServerMemoryAdapter,
    ServerSteps,
    Source,
    entry_from_proto,
    new_memory_id,
)
from mnemo.adapters.sqlite_cache import PendingWrite, SqliteMemoryCache
from mnemo.client import AsyncChangeFollower, ChangeFollower
from mnemo.client.errors import (
    DeadlineExceededError,
    FailedPreconditionError,
    InvalidArgumentError,
    MnemoError,
    OutOfRangeError,
    ResourceExhaustedError,
    UnavailableError,
    UnimplementedError,
)
from mnemo.v1 import sync_pb2 as sy

__all__ = [
    "AsyncHybridMemoryAdapter",
    "HybridMemoryAdapter",
    "OnRemoteFailure",
    "create_hybrid_memory_adapter",
]

#: What a failed server write does to the optimistic cache write.
OnRemoteFailure = Literal["rollback", "keep"]
#: Failures that mean "the server could not be reached": what ``"keep"`` keeps.
OFFLINE = (UnavailableError, DeadlineExceededError, ResourceExhaustedError)
_CHANGES_PAGE = 500
_WORD = re.compile(r"\w+")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _aware(value: datetime.datetime) -> datetime.datetime:
    """``value`` with a time zone (a naive datetime is UTC, as the client reads it)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)


def _refuses_event_time(error: InvalidArgumentError) -> bool:
    return any(v.field.endswith("event_time") for v in error.field_violations)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def local_recall(entries: Entries, query: str, conversation_id: str, limit: int) -> Hits:
    """Recall over cached entries: the share of the query's words an entry has;
    the conversation's entries, then pinned ones, win ties (as on the server)."""
    terms = _words(query)
    hits = []
    for entry in entries:
        in_scope = entry.scope == "identity" or entry.conversation_id == conversation_id
        if entry.archived or not in_scope or not terms:
            continue
        score = len(terms & _words(entry.text)) / len(terms)
        if score > 0:
            hits.append((score, entry.scope == "conversation", entry.pinned, entry))
    hits.sort(key=lambda hit: hit[:3], reverse=True)
    return [RecallHit(entry, score) for score, _, _, entry in hits[:limit]]


def _matches(
    entry: MemoryEntry, scope: Scope | None, conversation_id: str, key: str, archived: bool
) -> bool:
    return (
        (archived or not entry.archived)
        and (scope is None or entry.scope == scope)
        and (not conversation_id or entry.conversation_id == conversation_id)
        and (not key or entry.key == key)
    )


class HybridSteps:
    """The hybrid adapter's operations as steps, for the blocking and asyncio forms."""

    def __init__(
        self, remote: ServerSteps, cache: SqliteMemoryCache, on_remote_failure: OnRemoteFailure
    ) -> None:
        if on_remote_failure not in ("rollback", "keep"):
            raise ValueError(
                f"on_remote_failure must be 'rollback' or 'keep', not {on_remote_failure!r}"
            )
        self.remote = remote
        self.cache = cache
        self.on_remote_failure = on_remote_failure

    @property
    def user(self) -> str:
        return self.remote.user

    def _keeps(self, error: MnemoError) -> bool:
        return self.on_remote_failure == "keep" and isinstance(error, OFFLINE)

    # --------------------------------------------------------------- writes

    def save(
        self,
        text: str,
        *,
        key: str = "",
        scope: Scope | None = None,
        conversation_id: str = "",
        source: Source = "tool_call",
        metadata: Mapping[str, str] | None = None,
        pinned: bool = False,
        event_time: datetime.datetime | None = None,
        origin_conversation_id: str = "",
    ) -> Steps[MemoryEntry]:
        """Save a new entry, optimistically (see the module for a failing
        server). ``event_time``: when the fact was stated (the turn's time),
        else the device's clock now; sent with the save, queued or not.
        ``origin_conversation_id``: the conversation the save is made in
        (``conversation_id`` by default): a save from a temporary one is
        refused by the server and rolled back here. Returns the server's
        entry: for a fact already live, that entry (another id than the
        optimistic one, which leaves the cache)."""
        chosen: Scope = scope or ("conversation" if conversation_id else "identity")
        entry: dict[str, Any] = {
            "text": text,
            "key": key,
            "scope": chosen,
            "conversation_id": conversation_id,
            "source": source,
            "metadata": dict(metadata or {}),
            "pinned": pinned,
        }
        memory_id, request_id, now = new_memory_id(), str(uuid.uuid4()), _now()
        said = now if event_time is None else _aware(event_time)
        payload = {
            **entry,
            "origin_conversation_id": origin_conversation_id or conversation_id,
            # The same request now and queued: a late send keeps when it was said.
            "event_time": said.isoformat(),
            "device_time": event_time is None,
        }
        optimistic = MemoryEntry(
            id=memory_id, created_at=now, updated_at=now, event_time=said, **entry
        )
        with self.cache.transaction():
            optimistic, superseded = self._supersede_locally(optimistic, now)
            self.cache.put(self.user, optimistic)
        try:
            yield from self.push_pending()
            result = yield from self._create(payload, memory_id, request_id)
        except MnemoError as error:
            if self._keeps(error):
                self.cache.add_pending(self.user, memory_id, "create", payload, request_id)
                return optimistic
            with self.cache.transaction():
                self.cache.remove(self.user, memory_id)
                for earlier in superseded:
                    self.cache.put(self.user, earlier)
            raise
        with self.cache.transaction():
            if result.outcome != "created":  # the server archived nothing
                for earlier in superseded:
                    self.cache.put(self.user, earlier)
            if result.entry.id != memory_id:  # the fact was already live: that entry, not ours
                self.cache.remove(self.user, memory_id)
            self.cache.put(self.user, result.entry)
        return result.entry

    def _create(
        self, payload: Mapping[str, Any], memory_id: str, request_id: str
    ) -> Steps[SaveResult]:
        """Send a save (``payload`` as ``save`` queues it). An event time the
        server refuses that was only the device's clock (more than a day
        ahead of the server's) is left to the server's clock instead."""
        fields = dict(payload)
        device_time = bool(fields.pop("device_time", False))
        said = fields.pop("event_time", None)
        when = datetime.datetime.fromisoformat(said) if said else None
        try:
            result: SaveResult = yield from self.remote.save_result(
                **fields, event_time=when, memory_id=memory_id, request_id=request_id
            )
        except InvalidArgumentError as error:
            if not (device_time and when is not None and _refuses_event_time(error)):
                raise
            # Refused, so nothing was stored under the request id: a new one.
            result = yield from self.remote.save_result(
                **fields, memory_id=memory_id, request_id=str(uuid.uuid4())
            )
        return result

    def _supersede_locally(
        self, saved: MemoryEntry, now: datetime.datetime
    ) -> tuple[MemoryEntry, Entries]:
        """What the server will do with a keyed save, in the cache: archive the
        cached live entries of its key (returned as they were), or, when one
        of its key states a later fact, keep ``saved`` as an earlier version
        (returned archived, nothing superseded)."""
        if not saved.key:
            return saved, []
        same_key = [
            entry
            for entry in self.cache.entries(self.user)
            if (entry.scope, entry.key, entry.conversation_id)
            == (saved.scope, saved.key, saved.conversation_id)
        ]
        said = saved.event_time
        later = [e.event_time for e in same_key if e.event_time and said and e.event_time > said]
        if later:
            return dataclasses.replace(saved, archived_at=now, valid_until=min(later)), []
        superseded = [entry for entry in same_key if not entry.archived]
        for entry in superseded:
            self.cache.put(self.user, dataclasses.replace(entry, archived_at=now, valid_until=said))
        return saved, superseded

    def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
        pinned: bool | None = None,
        origin_conversation_id: str = "",
    ) -> Steps[MemoryEntry]:
        """Change an entry (what is given), optimistically (see the module);
        ``origin_conversation_id``: as for ``save``."""
        before = self.cache.get(self.user, memory_id)
        optimistic = None
        if before is not None:
            optimistic = dataclasses.replace(
                before,
                text=before.text if text is None else text,
                metadata=before.metadata if metadata is None else dict(metadata),
                pinned=before.pinned if pinned is None else pinned,
                updated_at=_now(),
            )
            self.cache.put(self.user, optimistic)
        try:
            yield from self.push_pending()
            updated = yield from self.remote.update(
                memory_id,
                text=text,
                metadata=metadata,
                pinned=pinned,
                origin_conversation_id=origin_conversation_id,
            )
        except MnemoError as error:
            if optimistic is not None and before is not None and self._keeps(error):
                new_metadata = None if metadata is None else dict(metadata)
                change = {"text": text, "metadata": new_metadata, "pinned": pinned}
                payload = {
                    **change,
                    "etag": before.etag,
                    "origin_conversation_id": origin_conversation_id,
                }
                self.cache.add_pending(self.user, memory_id, "update", payload, "")
                return optimistic
            if before is not None:
                self.cache.put(self.user, before)
            raise
        self.cache.put(self.user, updated)
        return updated

    def delete(self, memory_id: str, *, origin_conversation_id: str = "") -> Steps[None]:
        """Delete an entry, optimistically (see the module);
        ``origin_conversation_id``: as for ``save``."""
        before = self.cache.get(self.user, memory_id)
        self.cache.remove(self.user, memory_id)
        try:
            yield from self.push_pending()
            yield from self.remote.delete(memory_id, origin_conversation_id=origin_conversation_id)
        except MnemoError as error:
            if self._keeps(error):
                etag = before.etag if before is not None else ""
                payload = {"etag": etag, "origin_conversation_id": origin_conversation_id}
                self.cache.add_pending(self.user, memory_id, "delete", payload, "")
                return
            if before is not None:
                self.cache.put(self.user, before)
            raise

    # ---------------------------------------------------------------- reads

    def cached(self) -> Entries:
        """Every cached entry (archived ones included), newest first; ``[]`` if unreadable."""
        try:
            return self.cache.entries(self.user)
        except sqlite3.Error:
            return []

    def list(
        self,
        *,
        scope: Scope | None = None,
        conversation_id: str = "",
        key: str = "",
        include_archived: bool = False,
    ) -> Steps[Entries]:
        """Entries from the server, else from the cache, else none. Never raises."""
        try:
            yield from self.push_pending()
            entries: Entries = yield from self.remote.list(
                scope=scope,
                conversation_id=conversation_id,
                key=key,
                include_archived=include_archived,
            )
        except (FailedPreconditionError, sqlite3.Error):  # memory switched off, consent withdrawn
            return []
        except MnemoError:
            return [
                e
                for e in self.cached()
                if _matches(e, scope, conversation_id, key, include_archived)
            ]
        self._refresh(entries)
        return entries

    def recall(self, query: str, *, conversation_id: str = "", limit: int = 5) -> Steps[Hits]:
        """Recall from the server, else from the cache (word match), else nothing. Never raises."""
        try:
            yield from self.push_pending()
            hits: Hits = yield from self.remote.recall(
                query, conversation_id=conversation_id, limit=limit
            )
        except (FailedPreconditionError, sqlite3.Error):
            return []
        except MnemoError:
            return local_recall(self.cached(), query, conversation_id, limit)
        self._refresh([hit.entry for hit in hits])
        return hits

    def get(self, memory_id: str) -> Steps[MemoryEntry | None]:
        """One entry from the server, else from the cache. Never raises."""
        try:
            entry = yield from self.remote.get(memory_id)
        except FailedPreconditionError:
            return None
        except MnemoError:
            with contextlib.suppress(sqlite3.Error):
                return self.cache.get(self.user, memory_id)
            return None
        self._refresh([entry] if entry is not None else [])
        return entry

    def _refresh(self, entries: Entries) -> None:
        """What the server just said replaces the cached entries (but not queued writes)."""
        with contextlib.suppress(sqlite3.Error), self.cache.transaction():
            pending = self.cache.pending_ids(self.user)
            for entry in entries:
                if entry.id not in pending:
                    self.cache.put(self.user, entry)

    # ------------------------------------------------------ reconciliation

    def sync(self) -> Steps[int | None]:
        """Send the queued writes, then bring the cache up to the change feed;
        returns the cursor reached (``None`` on a server without a change feed)."""
        yield from self.push_pending()
        cursor = self.cache.cursor(self.user)
        if cursor is None:
            return (yield from self.resync())
        while True:
            try:
                page: sy.ListChangesResponse = yield self._changes_after(cursor)
            except (OutOfRangeError, UnimplementedError):
                return (yield from self.resync())
            with self.cache.transaction():
                for change in page.changes:
                    self.apply(change)
                cursor = max(cursor, page.next_cursor)
                self.cache.set_cursor(self.user, cursor)
            if not page.changes or cursor >= page.latest_cursor:
                return cursor

    def _changes_after(self, cursor: int) -> Call:
        return lambda c: c.list_changes(self.user, after_cursor=cursor, page_size=_CHANGES_PAGE)

    def resync(self) -> Steps[int | None]:
        """Replace the cache with the server's full list; the feed goes on from
        the latest cursor read before the list."""
        try:
            page: sy.ListChangesResponse = yield lambda c: c.list_changes(self.user, page_size=1)
            latest: int | None = page.latest_cursor
        except UnimplementedError:
            latest = None
        entries = yield from self.remote.list(include_archived=True)
        with self.cache.transaction():
            self.cache.replace_all(self.user, entries)
            if latest is not None:
                self.cache.set_cursor(self.user, latest)
        return latest

    def apply(self, change: sy.Change) -> None:
        """Apply one change of the feed to the cache (server wins), and its cursor."""
        with self.cache.transaction():
            if change.operation == sy.CHANGE_OPERATION_ERASE:
                self.cache.clear(self.user)
            elif change.WhichOneof("state") == "memory":
                self._apply_upsert(entry_from_proto(change.memory))
            elif change.WhichOneof("state") == "tombstone" or (
                change.operation == sy.CHANGE_OPERATION_DELETE
                and "/memories/" in change.resource_name
            ):
                memory_id = change.resource_name.rsplit("/", 1)[-1]
                self.cache.drop_pending(self.user, memory_id=memory_id)
                self.cache.remove(self.user, memory_id)
            self.cache.set_cursor(self.user, change.cursor)

    def _apply_upsert(self, entry: MemoryEntry) -> None:
        kept = False
        for write in self.cache.pending(self.user):
            if write.id != entry.id:
                continue
            # A queued create is confirmed by the change; a queued update or
            # delete based on another version lost to the server's.
            if write.operation == "create" or write.payload.get("etag") != entry.etag:
                self.cache.drop_pending(self.user, seq=write.seq)
            else:
                kept = True
        if not kept:
            self.cache.put(self.user, entry)

    def follow(self, event: sy.Change | sy.Heartbeat) -> Steps[None]:
        """One event of the followed feed: a change is applied; a heartbeat (caught
        up, and the server answers again) sends the queued writes, if any."""
        if isinstance(event, sy.Change):
            self.apply(event)
        elif self.cache.pending(self.user):
            with contextlib.suppress(MnemoError):
                yield from self.push_pending()

    def push_pending(self) -> Steps[None]:
        """Send the queued writes in order; raises the failure when the server
        cannot be reached (the rest stays queued)."""
        new_etags: dict[str, tuple[str, str]] = {}
        renamed: dict[str, str] = {}
        for queued in self.cache.pending(self.user):
            write = dataclasses.replace(queued, id=renamed.get(queued.id, queued.id))
            try:
                yield from self._push(write, new_etags, renamed)
            except OFFLINE:
                raise
            except MnemoError:  # refused: the server's version wins
                self.cache.drop_pending(self.user, seq=write.seq)
                current = yield from self.remote.get(write.id)
                if current is None:
                    self.cache.remove(self.user, write.id)
                else:
                    self.cache.put(self.user, current)
                continue
            self.cache.drop_pending(self.user, seq=write.seq)

    def _push(
        self,
        write: PendingWrite,
        new_etags: dict[str, tuple[str, str]],
        renamed: dict[str, str],
    ) -> Steps[None]:
        payload = dict(write.payload)
        etag = payload.pop("etag", "")
        base, new = new_etags.get(write.id, ("", ""))
        if etag and etag == base:  # our own earlier queued update changed it
            etag = new
        if write.operation == "create":
            result = yield from self._create(payload, write.id, write.request_id)
            saved = result.entry
            if saved.id != write.id:  # the fact was already live: that entry replaces ours
                with self.cache.transaction():
                    self.cache.remove(self.user, write.id)
                    self.cache.rename_pending(self.user, write.id, saved.id)
                renamed[write.id] = saved.id
            if result.outcome != "created" and saved.key:
                # The cache archived the key's live entry when the save was
                # made; the server did not: its view of the key replaces ours.
                chain = yield from self.remote.list(
                    scope=saved.scope,
                    conversation_id=saved.conversation_id,
                    key=saved.key,
                    include_archived=True,
                )
                self._refresh(chain)
            self.cache.put(self.user, saved)
        elif write.operation == "update":
            updated = yield from self.remote.update(write.id, etag=etag, **payload)
            new_etags[write.id] = (etag, updated.etag)
            self.cache.put(self.user, updated)
        else:
            yield from self.remote.delete(write.id, etag=etag, **payload)
            self.cache.remove(self.user, write.id)


class _HybridBase:
    def __init__(
        self,
        remote: ServerMemoryAdapter | AsyncServerMemoryAdapter,
        cache: SqliteMemoryCache | str | Path,
        on_remote_failure: OnRemoteFailure,
    ) -> None:
        self.remote = remote
        self.cache = cache if isinstance(cache, SqliteMemoryCache) else SqliteMemoryCache(cache)
        self.steps = HybridSteps(remote.steps, self.cache, on_remote_failure)
        self._client: Any = remote.client

    @property
    def user(self) -> str:
        return self.steps.user

    def cached(self) -> Entries:
        """Every cached entry (archived ones included), newest first, without asking the server."""
        return self.steps.cached()

    def pending(self) -> list[PendingWrite]:
        """The writes kept while the server was unreachable, oldest first."""
        return self.cache.pending(self.user)


class HybridMemoryAdapter(_HybridBase):
    """gecx-chat's hybrid memory adapter, blocking; ``start()`` follows the feed in a thread."""

    def __init__(
        self,
        remote: ServerMemoryAdapter,
        cache: SqliteMemoryCache | str | Path,
        *,
        on_remote_failure: OnRemoteFailure = "rollback",
    ) -> None:
        super().__init__(remote, cache, on_remote_failure)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    save = blocking(HybridSteps.save)
    update = blocking(HybridSteps.update)
    delete = blocking(HybridSteps.delete)
    list = blocking(HybridSteps.list)
    recall = blocking(HybridSteps.recall)
    get = blocking(HybridSteps.get)

    sync = blocking(HybridSteps.sync)

    def start(self) -> None:
        """Follow the change feed in a daemon thread until ``close()``.

        The thread first runs ``sync()`` (again, every half second, until the
        server answers), then applies each change as it commits and sends the
        queued writes whenever the feed says it is caught up. Without a change
        feed on the server (``UNIMPLEMENTED``) it stops after the first sync.
        """
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._follow, name="mnemo-hybrid", daemon=True)
            self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop following; waits up to ``timeout`` for the thread, which ends at
        the feed's next change or heartbeat (the server's ``--watch-heartbeat-seconds``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                cursor = run_steps(self._client, self.steps.sync())
            except MnemoError:
                self._stop.wait(0.5)
                continue
            follower = ChangeFollower(
                self._client,
                self.user,
                after_cursor=cursor or 0,
                on_expired=self._resync,
            )
            try:
                for event in follower:
                    if self._stop.is_set():
                        return
                    run_steps(self._client, self.steps.follow(event))
            except UnimplementedError:
                return
            except MnemoError:
                self._stop.wait(0.5)

    def _resync(self) -> None:
        run_steps(self._client, self.steps.resync())


class AsyncHybridMemoryAdapter(_HybridBase):
    """gecx-chat's hybrid memory adapter, asyncio; ``start()`` follows the feed in a task."""

    def __init__(
        self,
        remote: AsyncServerMemoryAdapter,
        cache: SqliteMemoryCache | str | Path,
        *,
        on_remote_failure: OnRemoteFailure = "rollback",
    ) -> None:
        super().__init__(remote, cache, on_remote_failure)
        self._task: asyncio.Task[None] | None = None

    save = awaitable(HybridSteps.save)
    update = awaitable(HybridSteps.update)
    delete = awaitable(HybridSteps.delete)
    list = awaitable(HybridSteps.list)
    recall = awaitable(HybridSteps.recall)
    get = awaitable(HybridSteps.get)

    sync = awaitable(HybridSteps.sync)

    def start(self) -> None:
        """Follow the change feed in a task of the running loop until ``close()``
        (as ``HybridMemoryAdapter.start`` does in a thread)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._follow())

    async def close(self) -> None:
        """Stop following."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _resync(self) -> None:
        await arun_steps(self._client, self.steps.resync())

    async def _follow(self) -> None:
        while True:
            try:
                cursor = await arun_steps(self._client, self.steps.sync())
            except MnemoError:
                await asyncio.sleep(0.5)
                continue
            follower = AsyncChangeFollower(
                self._client, self.user, after_cursor=cursor or 0, on_expired=self._resync
            )
            try:
                async for event in follower:
                    await arun_steps(self._client, self.steps.follow(event))
            except UnimplementedError:
                return
            except MnemoError:
                await asyncio.sleep(0.5)


@overload
def create_hybrid_memory_adapter(
    *,
    remote: ServerMemoryAdapter,
    cache: SqliteMemoryCache | str | Path,
    on_remote_failure: OnRemoteFailure = ...,
) -> HybridMemoryAdapter: ...


@overload
def create_hybrid_memory_adapter(
    *,
    remote: AsyncServerMemoryAdapter,
    cache: SqliteMemoryCache | str | Path,
    on_remote_failure: OnRemoteFailure = ...,
) -> AsyncHybridMemoryAdapter: ...


def create_hybrid_memory_adapter(
    *,
    remote: ServerMemoryAdapter | AsyncServerMemoryAdapter,
    cache: SqliteMemoryCache | str | Path,
    on_remote_failure: OnRemoteFailure = "rollback",
) -> HybridMemoryAdapter | AsyncHybridMemoryAdapter:
    """gecx-chat's ``createHybridMemoryAdapter({ remote, cache, onRemoteFailure })``."""
    if isinstance(remote, AsyncServerMemoryAdapter):
        return AsyncHybridMemoryAdapter(remote, cache, on_remote_failure=on_remote_failure)
    return HybridMemoryAdapter(remote, cache, on_remote_failure=on_remote_failure)
