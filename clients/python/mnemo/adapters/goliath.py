"""goliath's ``Memory`` over Mnemo's working memory.

goliath keeps, per conversation, a ``MemoryState``: a rolling summary and the
last exchanges verbatim, read by ``load()`` and written by ``save(state)``.
Its factory form gets the conversation id (``None`` for the default
conversation) and returns that conversation's memory. The one-line swap::

    agent = create_agent(model=model, memory=mnemo_memory(mnemo, user="u1"))

``mnemo`` is a ``MnemoClient`` (the memories are blocking) or an
``AsyncMnemoClient`` (``load``/``save`` are coroutines).

Errors, as goliath promises ("what cannot be read comes back empty"):

- ``load`` returns an empty state when the server cannot answer: the status
  codes in ``DEGRADED`` (``UNAVAILABLE``, ``DEADLINE_EXCEEDED``,
  ``RESOURCE_EXHAUSTED``, ``ABORTED``, ``INTERNAL``, ``UNKNOWN``,
  ``DATA_LOSS``, ``CANCELLED``). Everything else is the caller's to fix and is
  raised: ``InvalidArgumentError`` (a malformed user or conversation id),
  ``UnauthenticatedError``, ``PermissionDeniedError``, ``UnimplementedError``.
- ``save`` is conditional on the etag this memory last read or wrote. When
  another device wrote in between (or the load degraded, so this memory never
  saw what is stored), it re-reads and merges instead of overwriting
  (``merge_states``: their exchanges plus the ones this agent added, the
  agent's summary if it changed it), up to ``max_conflict_retries`` times, then
  raises ``EtagMismatchError``. Every other ``MnemoError`` is raised, e.g.
  ``InvalidArgumentError`` ``SUMMARY_OVER_BUDGET``. The first save of a
  conversation never written is unconditional: a never-written state has no
  etag to send (the contract has no "only if absent" condition).

The TypeScript adapter (``clients/typescript/src/adapters/goliath.ts``) merges
the same way.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, overload

import grpc

from mnemo.adapters._steps import Call, ClientT, Steps, awaitable, blocking
from mnemo.client import AsyncMnemoClient, MnemoClient
from mnemo.client.errors import EtagMismatchError, MnemoError
from mnemo.v1 import working_memory_pb2 as wm

__all__ = [
    "DEGRADED",
    "AsyncMnemoMemory",
    "Exchange",
    "MemoryState",
    "MnemoMemory",
    "empty_memory",
    "merge_states",
    "mnemo_memory",
]

#: Exchanges a merge keeps verbatim (goliath's three).
KEEP_RECENT = 3
#: How often ``save`` re-reads and merges after another writer's save.
MAX_CONFLICT_RETRIES = 3

#: The status codes with which ``load`` returns an empty state instead of raising.
DEGRADED = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DATA_LOSS,
        grpc.StatusCode.CANCELLED,
    }
)


@dataclass(frozen=True, slots=True)
class Exchange:
    """One question and its answer; ``at`` is epoch milliseconds, as in goliath."""

    ask: str
    answer: str
    at: int


@dataclass(frozen=True, slots=True)
class MemoryState:
    """goliath's ``MemoryState``: a rolling brief and the last exchanges, oldest first.

    ``etag`` is Mnemo's: filled by ``load``; a state built without one is saved
    against the etag the memory last saw.
    """

    summary: str = ""
    recent: list[Exchange] = field(default_factory=list)
    etag: str = ""


def empty_memory() -> MemoryState:
    """The state of a conversation with nothing remembered."""
    return MemoryState()


def _from_proto(state: wm.MemoryState) -> MemoryState:
    return MemoryState(
        summary=state.summary,
        recent=[
            Exchange(e.ask, e.answer, e.at.ToMilliseconds() if e.HasField("at") else 0)
            for e in state.recent
        ],
        etag=state.etag,
    )


def _exchange_proto(exchange: Exchange) -> wm.Exchange:
    at = datetime.datetime.fromtimestamp(exchange.at / 1000, tz=datetime.UTC)
    return wm.Exchange(ask=exchange.ask, answer=exchange.answer, at=at)


def merge_states(
    base: MemoryState | None, ours: MemoryState, theirs: MemoryState, keep_recent: int
) -> MemoryState:
    """What to write when the stored state (``theirs``) moved on from ``base``
    (what the agent loaded; ``None`` when its load degraded) while the agent
    produced ``ours``: their exchanges plus the ones the agent added, oldest
    first, the newest ``keep_recent`` kept (or as many as the agent kept, if
    more); the agent's summary if it changed it, else theirs. Nothing the other
    writer added is overwritten, though exchanges that fall off the end are not
    folded into the summary (goliath's scribe runs on the device, not here).
    """
    known = set(base.recent) if base else set()
    merged = dict.fromkeys(theirs.recent)
    merged.update({exchange: None for exchange in ours.recent if exchange not in known})
    recent = sorted(merged, key=lambda e: e.at)
    keep = max(keep_recent, len(ours.recent))
    changed_summary = ours.summary != (base.summary if base else "")
    return MemoryState(
        summary=ours.summary if changed_summary else theirs.summary,
        recent=recent[max(0, len(recent) - keep) :],
    )


class _MemorySteps:
    """The memory of one conversation, as steps run by a blocking or asyncio client."""

    def __init__(
        self, user: str, conversation: str | None, keep_recent: int, max_conflict_retries: int
    ) -> None:
        self.user = user
        self.conversation = conversation
        self.keep_recent = keep_recent
        self.max_conflict_retries = max_conflict_retries
        #: The state last read or written, with its etag; ``None``: unknown
        #: (never read, or the read degraded).
        self.seen: MemoryState | None = None

    def _read(self) -> Steps[MemoryState]:
        stored: wm.MemoryState = yield lambda c: c.get_memory_state(self.user, self.conversation)
        return _from_proto(stored)

    def _write(self, state: MemoryState, etag: str) -> Call:
        return lambda c: c.save_memory_state(
            self.user,
            self.conversation,
            summary=state.summary,
            recent=[_exchange_proto(e) for e in state.recent],
            etag=etag,
        )

    def load(self) -> Steps[MemoryState]:
        """The stored state; empty when never written or when it cannot be read (see module)."""
        try:
            self.seen = yield from self._read()
        except MnemoError as error:
            if error.code not in DEGRADED:
                raise
            self.seen = None
            return empty_memory()
        return self.seen

    def save(self, state: MemoryState) -> Steps[None]:
        """Replace the stored state; a write by someone else since our read is
        merged, never overwritten (see module)."""
        base = current = self.seen
        to_write = state
        for attempt in range(self.max_conflict_retries + 1):
            if current is None:
                current = yield from self._read()
                to_write = merge_states(base, state, current, self.keep_recent)
            try:
                saved: wm.MemoryState = yield self._write(to_write, current.etag)
            except EtagMismatchError:
                if attempt == self.max_conflict_retries:
                    raise
                current = None
                continue
            self.seen = _from_proto(saved)
            return


class _Memory(Generic[ClientT]):
    def __init__(
        self,
        client: ClientT,
        user: str,
        conversation: str | None = None,
        *,
        keep_recent: int = KEEP_RECENT,
        max_conflict_retries: int = MAX_CONFLICT_RETRIES,
    ) -> None:
        self._client = client
        self.steps = _MemorySteps(user, conversation, keep_recent, max_conflict_retries)

    @property
    def conversation(self) -> str | None:
        """The conversation id; ``None`` for the default conversation."""
        return self.steps.conversation

    @property
    def etag(self) -> str | None:
        """The etag last read or written; ``None`` while unknown (see module)."""
        return self.steps.seen.etag if self.steps.seen is not None else None

    def __repr__(self) -> str:
        steps = self.steps
        return f"{type(self).__name__}(user={steps.user!r}, conversation={steps.conversation!r})"


class MnemoMemory(_Memory[MnemoClient]):
    """goliath's ``Memory`` (blocking): ``load()`` and ``save(state)``."""

    load = blocking(_MemorySteps.load)
    save = blocking(_MemorySteps.save)


class AsyncMnemoMemory(_Memory[AsyncMnemoClient]):
    """goliath's ``Memory`` (asyncio): ``await load()`` and ``await save(state)``."""

    load = awaitable(_MemorySteps.load)
    save = awaitable(_MemorySteps.save)


@overload
def mnemo_memory(
    client: MnemoClient,
    *,
    user: str,
    keep_recent: int = ...,
    max_conflict_retries: int = ...,
) -> Callable[[str | None], MnemoMemory]: ...


@overload
def mnemo_memory(
    client: AsyncMnemoClient,
    *,
    user: str,
    keep_recent: int = ...,
    max_conflict_retries: int = ...,
) -> Callable[[str | None], AsyncMnemoMemory]: ...


def mnemo_memory(
    client: MnemoClient | AsyncMnemoClient,
    *,
    user: str,
    keep_recent: int = KEEP_RECENT,
    max_conflict_retries: int = MAX_CONFLICT_RETRIES,
) -> Callable[[str | None], MnemoMemory] | Callable[[str | None], AsyncMnemoMemory]:
    """goliath's memory factory: ``factory(conversation_id)`` returns that
    conversation's memory, a new one per call; ``None`` is the default conversation.

    ``keep_recent`` is how many exchanges a merge keeps (goliath's three);
    ``max_conflict_retries`` how often ``save`` re-reads and merges.
    """
    options = {"keep_recent": keep_recent, "max_conflict_retries": max_conflict_retries}
    if isinstance(client, AsyncMnemoClient):
        async_client = client
        return lambda conversation: AsyncMnemoMemory(async_client, user, conversation, **options)
    sync_client = client
    return lambda conversation: MnemoMemory(sync_client, user, conversation, **options)
