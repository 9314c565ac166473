"""The writes of long-term memory (gecx-chat): ``MemoryService``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from mnemo_server.domain.commands import Command, Idempotent
from mnemo_server.domain.memory_models import (
    CandidateDraft,
    Extracted,
    Memory,
    MemoryCandidate,
    MemoryChange,
    MemoryDraft,
    MemoryTombstone,
    NearDuplicateProbe,
    SavedMemory,
)
from mnemo_server.domain.models import NewMessage

__all__ = [
    "ApproveCandidate",
    "CreateMemories",
    "DeleteMemory",
    "ExtractMemories",
    "ProposeCandidates",
    "RejectCandidate",
    "UpdateMemory",
]


def _draft_weight(draft: MemoryDraft) -> int:
    vector = 0 if draft.embedding is None else 4 * len(draft.embedding.values)
    return len(draft.text) + vector + sum(len(k) + len(v) for k, v in draft.metadata.items())


@dataclass(frozen=True, kw_only=True)
class CreateMemories(Idempotent[tuple[SavedMemory, ...]]):
    """Save ``drafts`` as new entries with the given ids, in order, all or
    nothing: one for ``CreateMemory``, up to a thousand for
    ``BatchCreateMemories``, what an extraction found for ``ExtractMemories``.
    The result is what saving them one at a time would give: a keyed save
    archives the live entry of its (scope, conversation, key), an earlier
    draft of the same command included. ``origin_conversation_ids``: the
    conversations the save comes from (a temporary one refuses it, whatever
    the drafts' scope). Raises
    ``AlreadyExists`` (an id taken, also by a deleted entry, or twice in
    ``drafts``) and ``EMBEDDING_DIMENSION_MISMATCH``, both with the draft's
    ``Entry``; the memory gate's ``FailedPrecondition``, ``REQUEST_ID_REUSED``."""

    drafts: tuple[tuple[str, MemoryDraft], ...]
    origin_conversation_ids: tuple[str, ...] = ()
    # The request's choice of the near-duplicate check (None: the server's);
    # the use case turns it into ``near`` (the drafts' vectors).
    near_duplicates: bool | None = None
    near: NearDuplicateProbe | None = None

    @property
    def weight(self) -> int:
        return sum(_draft_weight(draft) for _, draft in self.drafts)

    def recorded(self, result: tuple[SavedMemory, ...]) -> tuple[SavedMemory, ...]:
        """The entries without their vectors: no response carries one (they
        are input only), and a thousand vectors as JSON would cost a batch
        more than the rest of its record."""
        if all(saved.memory.embedding is None for saved in result):
            return result  # the store's result has none: the very objects the feed encoded
        return tuple(
            replace(saved, memory=replace(saved.memory, embedding=None))
            if saved.memory.embedding is not None
            else saved
            for saved in result
        )


@dataclass(frozen=True, kw_only=True)
class UpdateMemory(Command[Memory]):
    """Apply ``change`` to the entry; the previous version stays in its
    history. ``origin_conversation_id``: the conversation the update comes
    from (a temporary one refuses it). Raises ``NotFound``, ``ETAG_MISMATCH``,
    ``EMBEDDING_DIMENSION_MISMATCH``, the memory gate's ``FailedPrecondition``."""

    memory_id: str
    change: MemoryChange
    expected_etag: str | None = None
    origin_conversation_id: str = ""


@dataclass(frozen=True, kw_only=True)
class DeleteMemory(Command[MemoryTombstone]):
    """Erase the entry's text everywhere, leaving a tombstone (returned again
    on a repeat). ``origin_conversation_id``: the conversation the delete
    comes from (a temporary one refuses it). Raises ``NotFound``,
    ``ETAG_MISMATCH``, the memory gate's ``FailedPrecondition``."""

    memory_id: str
    expected_etag: str | None = None
    origin_conversation_id: str = ""


@dataclass(frozen=True, kw_only=True)
class ExtractMemories(Idempotent[Extracted]):
    """Run the heuristic extractor over ``messages``; what it finds becomes
    pending candidates (``require_approval``) or entries. The use case turns
    it into ``ProposeCandidates`` or ``CreateMemories``."""

    messages: tuple[NewMessage, ...]
    conversation_id: str = ""
    run_id: str = ""
    turn: int = 0
    require_approval: bool = False


@dataclass(frozen=True, kw_only=True)
class ProposeCandidates(Idempotent[tuple[MemoryCandidate, ...]]):
    """Store ``candidates`` as pending, in order. Raises the memory gate's
    ``FailedPrecondition``, ``REQUEST_ID_REUSED``."""

    candidates: tuple[CandidateDraft, ...]

    @property
    def weight(self) -> int:
        return sum(_draft_weight(c.draft) for c in self.candidates)


@dataclass(frozen=True, kw_only=True)
class ApproveCandidate(Command[tuple[Memory, MemoryCandidate]]):
    """Save the pending candidate as entry ``memory_id`` (source extractor);
    approving an approved one returns the same entry. Raises ``NotFound``,
    ``CANDIDATE_RESOLVED``, ``EMBEDDING_DIMENSION_MISMATCH``, the memory
    gate's ``FailedPrecondition``."""

    candidate_id: str
    memory_id: str


@dataclass(frozen=True, kw_only=True)
class RejectCandidate(Command[MemoryCandidate]):
    """Discard the pending candidate; rejecting a rejected one returns it.
    Raises ``NotFound``, ``CANDIDATE_RESOLVED``."""

    candidate_id: str
