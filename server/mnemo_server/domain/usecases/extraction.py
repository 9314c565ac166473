"""Extraction with approval: the built-in heuristic extractor over messages,
candidates proposed by clients' own extractors, and the user's approve /
reject, on top of ``MemoryStore``.

A candidate is a proposed entry waiting as *pending*; approving saves it as
an entry (source extractor, keyed supersede as any save), rejecting discards
it. Candidates and entries saved here get the configured embedder's vector
like any save: in the background (``usecases.embedding_worker``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from mnemo_server.domain import extraction as heuristics
from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.memories import (
    CreateMemories,
    ExtractMemories,
    ProposeCandidates,
)
from mnemo_server.domain.governance import Access, gate_error
from mnemo_server.domain.memory_models import (
    CandidateDraft,
    Extracted,
    MemoryCandidate,
    MemoryDraft,
    MemoryScope,
)
from mnemo_server.domain.models import Keyset, NewMessage, Page
from mnemo_server.domain.ports import CommandStore, GovernanceStore, MemoryStore
from mnemo_server.domain.usecases.memories import new_id


@dataclass(frozen=True)
class Proposal:
    """A candidate before it has an id: the entry and where it came from."""

    draft: MemoryDraft
    conversation_id: str = ""
    run_id: str = ""
    turn: int = 0
    extractor: str = ""


def found_proposals(
    messages: Sequence[NewMessage], *, conversation_id: str, run_id: str, turn: int
) -> list[Proposal]:
    """What the heuristic extractor finds in ``messages``, as proposals.

    A conversation-scoped finding needs a conversation: without one it is
    left out (every shipped pattern is identity-wide).
    """
    return [
        Proposal(
            replace(
                found.draft(conversation_id),
                event_time=messages[found.message_index].event_time,
            ),
            conversation_id,
            run_id,
            turn,
            found.label,
        )
        for found in heuristics.extract(messages)
        if found.scope is not MemoryScope.CONVERSATION or conversation_id
    ]


def candidate_drafts(proposals: Sequence[Proposal]) -> tuple[CandidateDraft, ...]:
    """``proposals`` as candidates with generated ids, in order."""
    return tuple(
        CandidateDraft(
            candidate_id=new_id(),
            draft=p.draft,
            conversation_id=p.conversation_id,
            run_id=p.run_id,
            turn=p.turn,
            extractor=p.extractor,
        )
        for p in proposals
    )


class Extraction:
    """Extract, propose, list, approve and reject candidates of one user."""

    def __init__(
        self,
        commands: CommandStore,
        store: MemoryStore,
        governance: GovernanceStore,
    ) -> None:
        self._commands = commands
        self._store = store
        self._governance = governance

    async def extract(self, command: ExtractMemories) -> Written[Extracted]:
        """Run the heuristic extractor over the user messages of the command;
        propose what it finds as pending candidates (``require_approval``) or
        save it as entries (source extractor, keyed by what was found, so a
        later "my name is" supersedes an earlier one). Finding nothing writes
        nothing. Raises ``REQUEST_ID_REUSED`` and the memory gate's
        ``FailedPrecondition`` (also when nothing is found)."""
        conversation_id = command.conversation_id
        proposals = found_proposals(
            command.messages,
            conversation_id=conversation_id,
            run_id=command.run_id,
            turn=command.turn,
        )
        if not proposals:
            named = (conversation_id,) if conversation_id else ()
            gate = await self._governance.memory_gate(command.user_id, named, Access.WRITE)
            if gate is not None:
                raise gate_error(gate, command.user_id, conversation_id)
            return Written(Extracted())
        if command.require_approval:
            proposed = await self.propose(
                ProposeCandidates(
                    caller=command.caller,
                    user_id=command.user_id,
                    candidates=candidate_drafts(proposals),
                    idempotency=command.idempotency,
                )
            )
            return Written(Extracted(candidates=proposed.value), proposed.change_cursor)
        saved = await self._commands.execute(
            CreateMemories(
                caller=command.caller,
                user_id=command.user_id,
                drafts=tuple((new_id(), p.draft) for p in proposals),
                idempotency=command.idempotency,
                origin_conversation_ids=(conversation_id,),
            )
        )
        return Written(
            Extracted(memories=tuple(s.memory for s in saved.value)), saved.change_cursor
        )

    async def propose(self, command: ProposeCandidates) -> Written[tuple[MemoryCandidate, ...]]:
        """Store the candidates as pending, in order (one approved without a
        vector is embedded in the background once saved). Raises
        ``REQUEST_ID_REUSED``."""
        return await self._commands.execute(command)

    async def list(
        self, user_id: str, *, include_resolved: bool, limit: int, after: Keyset | None
    ) -> Page[MemoryCandidate]:
        """Newest first; by default only pending candidates."""
        return await self._store.list_candidates(
            user_id, include_resolved=include_resolved, limit=limit, after=after
        )
