"""The background embedder: saves never wait for the server's embedder.

An entry saved without a vector is stored, lexically searchable, and queued
(``domain.embedding_backlog``) in its write's transaction; this worker takes
the backlog in batches, embeds them on a thread of its own and stores the
vectors. Recall uses the vectors that exist.

- **One process embeds per model.** The worker holds a lease on its model
  (``EmbeddingStore.lease``, renewed every third of ``lease_seconds``); the
  replicas of a deployment that do not hold it leave the backlog to the one
  that does, which polls every ``poll_seconds`` for what they queued. A
  process that stops releases it; one that dies loses it when it expires.
- **The serving path keeps the CPU.** The model runs on one thread whose
  scheduling priority is lowered (``nice`` 10, Linux): under load the
  backlog grows and drains afterwards, at the model's batch rate.
- **Read your writes.** A recall that embeds its query waits (``settled``,
  at most ``SETTLE_SECONDS``) until the entries this process queued for the
  same user are embedded, so an assistant that saves and then recalls finds
  what it saved by meaning. A waited-for user's entries go first, and at the
  serving path's priority (not the background thread's). Entries queued by
  another process, or while the embedder is failing, are not waited for.
- **Failures.** A batch that fails is retried text by text: a text the
  embedder refuses while others pass is taken off the backlog (logged and
  counted; the entry stays lexically searchable); when every text fails,
  or one fails because the provider is unreachable, slow or busy
  (``EmbedderFailure.kind``), the provider is down, and the worker backs off
  (1 s doubling to 60 s) and keeps the backlog. An answer that is not one
  valid vector of the model per text (``embedding.checked_vectors``) is a
  failure: nothing of it is stored.
- **Never stuck.** The embedder runs on threads of the worker's own (the
  niced one, and one at the serving path's priority for what a recall
  waits for), never the event loop's default executor; a remote provider's
  every request has a total deadline (``embedders.remote``).
- **Consent before meaning.** The backlog hands out only entries whose
  user's gates are open (``EmbeddingStore.pending``): no text of a user who
  withdrew consent or switched memory off, nor of a temporary conversation,
  reaches the embedder. Their entries wait in the backlog (not counted as
  waiting) until the gate opens again.
- **A new model** (a changed ``--embedder``) is backfilled: every entry
  without a vector of it is queued, ``backfill_scan`` entries per step,
  between batches (progress: ``EmbeddingStore.progress``, ``mnemo
  embeddings``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from mnemo_server.domain.embedding import Embedder, checked_vectors, failure_kind
from mnemo_server.domain.embedding_backlog import ComputedVector, PendingText
from mnemo_server.domain.errors import MnemoError
from mnemo_server.domain.memory_models import Embedding
from mnemo_server.domain.observe import NO_OBSERVER, Observer
from mnemo_server.domain.ports import EmbeddingStore

__all__ = ["SETTLE_SECONDS", "EmbeddingWorker"]

log = logging.getLogger(__name__)

BATCH = 32
"""Texts per call of the embedder."""
SETTLE_SECONDS = 3.0
"""The longest a recall waits for its user's queued entries."""
BACKFILL_SCAN = 5000
"""Entries walked per backfill step (one short write transaction)."""
NICE = 10
"""The embedding thread's scheduling priority (``nice``; 0 is the default)."""
_MAX_BACKOFF = 60.0


def _lower_priority() -> None:
    """Run this thread at ``NICE`` (on Linux a thread has its own priority)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)


def _holder_id() -> str:
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class EmbeddingFailed(Exception):
    """The embedder raised, or returned something other than one valid
    vector of its model per text; ``kind`` as ``EmbedderFailure.kind``."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def provider_down(self) -> bool:
        """Whether the failure says nothing about the texts: the provider
        is unreachable, too slow or busy."""
        return self.kind in _DOWN


_DOWN = frozenset({"unreachable", "timeout", "busy"})


class EmbeddingWorker:
    """Embeds the backlog with ``embedder`` until ``run``'s event is set
    (see the module doc)."""

    def __init__(
        self,
        store: EmbeddingStore,
        embedder: Embedder,
        *,
        batch: int = BATCH,
        poll_seconds: float = 0.5,
        lease_seconds: float = 15.0,
        backfill_scan: int = BACKFILL_SCAN,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._batch = batch
        self._poll = poll_seconds
        self._lease_seconds = lease_seconds
        self._scan = backfill_scan
        self._observer = observer
        self.holder = _holder_id()
        self.holding = False
        self.backlog = 0
        self._renew_at = 0.0
        self._backfill_done = False
        self._retry_at = 0.0
        self._backoff = 0.0
        self._seq = 0
        self._queued: dict[str, int] = {}  # user -> the sequence number of their last queue
        self._waiters: dict[str, asyncio.Event] = {}
        self._wake: asyncio.Event | None = None
        self._executor = ThreadPoolExecutor(
            1, thread_name_prefix="mnemo-embed", initializer=_lower_priority
        )
        self._urgent = ThreadPoolExecutor(1, thread_name_prefix="mnemo-embed-urgent")

    @property
    def model(self) -> str:
        return self._embedder.model

    @property
    def failing(self) -> bool:
        return self._retry_at > 0.0

    # ------------------------------------------------------------ callers

    def queued(self, user_id: str) -> None:
        """A write of ``user_id`` committed that queued entries for the
        embedder (``SqlStore.vectors_queued``, ``store.memories.vectors``)."""
        if not self.holding:
            return
        self._seq += 1
        self._queued[user_id] = self._seq
        if self._wake is not None:
            self._wake.set()

    async def settled(self, user_id: str, *, timeout: float = SETTLE_SECONDS) -> bool:
        """Wait until the entries this process queued for ``user_id`` are
        embedded (at most ``timeout`` seconds); whether they are (``True``
        at once when there are none, or they are not this process's to
        embed)."""
        if user_id not in self._queued or not self.holding or self.failing:
            return True
        event = self._waiters.get(user_id)
        if event is None:
            event = self._waiters[user_id] = asyncio.Event()
        if self._wake is not None:
            self._wake.set()
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # -------------------------------------------------------------- loop

    async def start(self) -> None:
        """Take the lease if free, so that the first saves are tracked
        (``queued``) before ``run`` starts. Raises ``Unavailable``."""
        await self._hold(announce=False)

    async def run(self, stopping: asyncio.Event) -> None:
        """Embed until ``stopping`` is set; a round that fails is logged and
        the next one tries again. Releases the lease at the end."""
        self._wake = asyncio.Event()
        try:
            while not stopping.is_set():
                try:
                    worked = await self._round()
                except MnemoError as error:  # the database is away or full: try again later
                    log.warning("background embedding round failed: %s", error.message)
                    worked = False
                except Exception:
                    log.warning("background embedding round failed", exc_info=True)
                    worked = False
                if not worked:
                    await self._idle(stopping)
        finally:
            self._settle_all()
            if self.holding:
                with contextlib.suppress(Exception):
                    await self._store.release(self.model, self.holder)
                self.holding = False
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._urgent.shutdown(wait=False, cancel_futures=True)

    async def _idle(self, stopping: asyncio.Event) -> None:
        assert self._wake is not None
        wait = self._poll
        if self.failing:
            wait = max(min(self._retry_at - time.monotonic(), wait), 0.0)
        self._wake.clear()
        stop = asyncio.ensure_future(stopping.wait())
        wake = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait((stop, wake), timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            wake.cancel()

    async def _round(self) -> bool:
        """One step: renew the lease, then embed a batch of a waiting user,
        else of the backlog, else take a backfill step. Whether it did
        anything (else the loop idles)."""
        if not await self._hold():
            return False
        if self.failing and time.monotonic() < self._retry_at:
            return False
        for user_id in list(self._waiters):
            seq = self._seq
            batch = await self._store.pending(limit=self._batch, user_id=user_id)
            if batch:
                await self._embed(batch, urgent=True)
            if len(batch) < self._batch and not self.failing:
                self._settle(user_id, seq)
            if batch:
                return True
        seq = self._seq
        batch = await self._store.pending(limit=self._batch)
        if batch:
            await self._embed(batch)
            return True
        self._settle_through(seq)
        self.backlog = 0
        if not self._backfill_done:
            step = await self._store.backfill(self.model, scan=self._scan)
            self._backfill_done = step.done
            if step.queued:
                log.info(
                    "backfill of %s: %d entries queued, through %d of %d",
                    self.model,
                    step.queued,
                    step.through,
                    step.last,
                )
            return True
        return False

    async def _hold(self, *, announce: bool = True) -> bool:
        """Take or renew the lease when due; whether this process holds it.
        ``announce``: log a lease taken (not at start: one line says the
        server serves)."""
        now = time.monotonic()
        if now < self._renew_at:
            return self.holding
        held = await self._store.lease(self.model, self.holder, seconds=self._lease_seconds)
        if held and not self.holding:
            self._backfill_done = False  # the store restarts the backfill on a new lease
            log.log(
                logging.INFO if announce else logging.DEBUG,
                "embedding with %s (lease %s)",
                self.model,
                self.holder,
            )
        self.holding = held
        self._renew_at = now + self._lease_seconds / 3
        if not held:
            self._settle_all()
        return held

    # ---------------------------------------------------------- embedding

    async def _embed(self, batch: Sequence[PendingText], *, urgent: bool = False) -> None:
        """Embed and store ``batch``; ``urgent``: a recall waits for it, so
        it runs at the serving path's priority."""
        started = time.monotonic()
        try:
            vectors = await self._vectors([p.text for p in batch], urgent=urgent)
        except EmbeddingFailed:
            self._observer.embedding_failed(len(batch))
            await self._one_by_one(batch)
            return
        self._recovered()
        await self._store_batch(batch, vectors, time.monotonic() - started)

    async def _one_by_one(self, batch: Sequence[PendingText]) -> None:
        """Embed each text alone: drop those the embedder refuses while
        others pass; back off when all fail or one fails for want of the
        provider (it is down: the rest would fail as slowly)."""
        done: list[tuple[PendingText, Embedding]] = []
        refused: list[PendingText] = []
        started = time.monotonic()
        for pending in batch:
            try:
                (vector,) = await self._vectors([pending.text])
            except EmbeddingFailed as failure:
                if failure.provider_down:
                    self._back_off()
                    return
                refused.append(pending)
            else:
                done.append((pending, vector))
        if not done:
            self._back_off()
            return
        self._recovered()
        if refused:
            self._observer.embedding_failed(len(refused))
            log.warning(
                "the embedder refuses the text of %d entries (ids %s); they stay "
                "lexically searchable, without a vector",
                len(refused),
                [p.memory_pk for p in refused],
            )
            await self._store.drop(refused)
        await self._store_batch(
            [p for p, _ in done], [v for _, v in done], time.monotonic() - started
        )

    async def _vectors(self, texts: list[str], *, urgent: bool = False) -> list[Embedding]:
        """The embedder's checked vectors of ``texts`` (``checked_vectors``),
        on the (niced) embedding thread, or on the urgent one. Raises
        ``EmbeddingFailed``."""
        embedder = self._embedder
        loop = asyncio.get_running_loop()
        executor = self._urgent if urgent else self._executor
        try:
            values = await loop.run_in_executor(executor, self._checked, texts)
        except Exception as exc:  # any failure of the embedder's code or provider
            log.warning("embedding %d texts failed: %s", len(texts), exc)
            raise EmbeddingFailed(str(exc), failure_kind(exc)) from exc
        return [Embedding(embedder.model, v) for v in values]

    def _checked(self, texts: list[str]) -> list[tuple[float, ...]]:
        return checked_vectors(self._embedder, texts, self._embedder.embed(texts))

    async def _store_batch(
        self, batch: Sequence[PendingText], vectors: Sequence[Embedding], seconds: float
    ) -> None:
        stored = await self._store.store_vectors(
            [
                ComputedVector(p.memory_pk, p.user_id, p.version, v)
                for p, v in zip(batch, vectors, strict=True)
            ]
        )
        if len(batch) == self._batch:
            self.backlog = await self._store.backlog_size()
        else:
            self.backlog = 0
        self._observer.embedded(stored, seconds, self.backlog)

    def _back_off(self) -> None:
        self._backoff = min(max(self._backoff * 2, 1.0), _MAX_BACKOFF)
        self._retry_at = time.monotonic() + self._backoff
        self._settle_all()  # nobody waits for a provider that is down
        log.warning("the embedder fails on every text; retrying in %.0f s", self._backoff)

    def _recovered(self) -> None:
        self._backoff = 0.0
        self._retry_at = 0.0

    # ----------------------------------------------------------- settling

    def _settle(self, user_id: str, seq: int) -> None:
        """``user_id``'s entries queued up to ``seq`` are embedded."""
        if self._queued.get(user_id, 0) <= seq:
            self._queued.pop(user_id, None)
            event = self._waiters.pop(user_id, None)
            if event is not None:
                event.set()

    def _settle_through(self, seq: int) -> None:
        for user_id in [u for u, s in self._queued.items() if s <= seq]:
            self._settle(user_id, seq)

    def _settle_all(self) -> None:
        self._queued.clear()
        for event in self._waiters.values():
            event.set()
        self._waiters.clear()
