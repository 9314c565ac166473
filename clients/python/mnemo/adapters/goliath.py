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
- ``save`` raises every ``MnemoError``. It is conditional on the etag of the
  state this memory last read or wrote: another device's write in between
  raises ``EtagMismatchError``. After a degraded ``load`` this memory does not
  know what is stored, so ``save`` first re-reads: it writes only if the
  stored state is still empty, and otherwise raises ``EtagMismatchError``
  rather than replace memories it never saw. The first save of a conversation
  never written is unconditional: a never-written state has no etag to send
  (the contract has no "only if absent" condition).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, overload

import grpc

from mnemo.adapters._steps import Steps, awaitable, blocking
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
    "mnemo_memory",
]

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


def _is_empty(state: wm.MemoryState) -> bool:
    return not state.summary and not state.recent


class _MemorySteps:
    """The memory of one conversation, as steps run by a blocking or asyncio client."""

    def __init__(self, user: str, conversation: str | None) -> None:
        self.user = user
        self.conversation = conversation
        #: The etag last read or written; ``None``: unknown (never read, or the read degraded).
        self.etag: str | None = None

    def load(self) -> Steps[MemoryState]:
        """The stored state; empty when never written or when it cannot be read (see module)."""
        try:
            stored: wm.MemoryState = yield lambda c: c.get_memory_state(
                self.user, self.conversation
            )
        except MnemoError as error:
            if error.code not in DEGRADED:
                raise
            self.etag = None
            return empty_memory()
        self.etag = stored.etag
        return _from_proto(stored)

    def save(self, state: MemoryState) -> Steps[None]:
        """Replace the stored state (conditional on the etag last seen; see module)."""
        etag = state.etag or self.etag
        if etag is None:
            stored: wm.MemoryState = yield lambda c: c.get_memory_state(
                self.user, self.conversation
            )
            if not _is_empty(stored):
                raise EtagMismatchError(
                    "the stored memory could not be read before this save; "
                    "load() it again instead of replacing it",
                    code=grpc.StatusCode.ABORTED,
                    reason="ETAG_MISMATCH",
                )
            etag = stored.etag
        saved: wm.MemoryState = yield lambda c: c.save_memory_state(
            self.user,
            self.conversation,
            summary=state.summary,
            recent=[_exchange_proto(e) for e in state.recent],
            etag=etag,
        )
        self.etag = saved.etag


class _Memory:
    def __init__(self, client: Any, user: str, conversation: str | None) -> None:
        self._client = client
        self.steps = _MemorySteps(user, conversation)

    @property
    def conversation(self) -> str | None:
        """The conversation id; ``None`` for the default conversation."""
        return self.steps.conversation

    @property
    def etag(self) -> str | None:
        """The etag last read or written; ``None`` while unknown (see module)."""
        return self.steps.etag

    def __repr__(self) -> str:
        steps = self.steps
        return f"{type(self).__name__}(user={steps.user!r}, conversation={steps.conversation!r})"


class MnemoMemory(_Memory):
    """goliath's ``Memory`` (blocking): ``load()`` and ``save(state)``."""

    def __init__(self, client: MnemoClient, user: str, conversation: str | None = None) -> None:
        super().__init__(client, user, conversation)

    load = blocking(_MemorySteps.load)
    save = blocking(_MemorySteps.save)


class AsyncMnemoMemory(_Memory):
    """goliath's ``Memory`` (asyncio): ``await load()`` and ``await save(state)``."""

    def __init__(
        self, client: AsyncMnemoClient, user: str, conversation: str | None = None
    ) -> None:
        super().__init__(client, user, conversation)

    load = awaitable(_MemorySteps.load)
    save = awaitable(_MemorySteps.save)


@overload
def mnemo_memory(client: MnemoClient, *, user: str) -> Callable[[str | None], MnemoMemory]: ...


@overload
def mnemo_memory(
    client: AsyncMnemoClient, *, user: str
) -> Callable[[str | None], AsyncMnemoMemory]: ...


def mnemo_memory(
    client: MnemoClient | AsyncMnemoClient, *, user: str
) -> Callable[[str | None], MnemoMemory] | Callable[[str | None], AsyncMnemoMemory]:
    """goliath's memory factory: ``factory(conversation_id)`` returns that
    conversation's memory, a new one per call; ``None`` is the default conversation.
    """
    if isinstance(client, AsyncMnemoClient):
        async_client = client
        return lambda conversation: AsyncMnemoMemory(async_client, user, conversation)
    sync_client = client
    return lambda conversation: MnemoMemory(sync_client, user, conversation)
