"""The writes of working memory (goliath): ``WorkingMemoryService``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from mnemo_server.domain.commands import Command, Idempotent
from mnemo_server.domain.models import ConversationKey, Exchange, MemoryState, RememberResult

__all__ = ["ClearMemoryState", "RememberExchange", "SaveMemoryState"]

R = TypeVar("R")


@dataclass(frozen=True, kw_only=True)
class _StateWrite(Command[R]):
    """A write of one conversation's working memory (``""``: the default one);
    ``expected_etag`` ``None`` is unconditional."""

    conversation_id: str
    expected_etag: str | None = None

    @property
    def key(self) -> ConversationKey:
        return ConversationKey(self.user_id, self.conversation_id)


@dataclass(frozen=True, kw_only=True)
class SaveMemoryState(_StateWrite[MemoryState]):
    """Replace the whole state. Raises ``ETAG_MISMATCH``."""

    summary: str
    recent: tuple[Exchange, ...]


@dataclass(frozen=True, kw_only=True)
class RememberExchange(_StateWrite[RememberResult], Idempotent[RememberResult]):
    """Append ``exchange``, keep the newest ``keep_recent``, return the evicted
    ones; replace the summary when ``summary`` is set. Raises
    ``ETAG_MISMATCH``, ``REQUEST_ID_REUSED``."""

    exchange: Exchange
    keep_recent: int
    summary: str | None = None


@dataclass(frozen=True, kw_only=True)
class ClearMemoryState(_StateWrite[MemoryState]):
    """Empty the state (a new etag) and strip the earlier states from the
    change feed. Raises ``ETAG_MISMATCH``."""
