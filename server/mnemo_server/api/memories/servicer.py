"""MemoryService: validate, call the use case, convert the result.

Validation collects every problem of a request (``api.memories.requests``)
before any use case runs; the error contracts are those of
``protos/mnemo/v1/memories.proto`` and ``docs/api/memories.md``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import memories_pb2_grpc as pb_grpc
from mnemo_server.api import pagination
from mnemo_server.api.convert import expected_etag
from mnemo_server.api.idempotency import idempotency_of
from mnemo_server.api.memories import convert, requests
from mnemo_server.api.memories.rules import RULES
from mnemo_server.api.validation import (
    Validator,
    check_fields,
    message_event_times,
    messages_of,
    user_of,
)
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.config import Settings
from mnemo_server.domain.commands.memories import (
    ApproveCandidate,
    CreateMemories,
    DeleteMemory,
    ExtractMemories,
    ProposeCandidates,
    RejectCandidate,
    UpdateMemory,
)
from mnemo_server.domain.memory_models import MemorySource, SavedMemory
from mnemo_server.domain.names import memory_name
from mnemo_server.domain.usecases.extraction import Extraction, Proposal, candidate_drafts
from mnemo_server.domain.usecases.memories import Memories, new_id
from mnemo_server.domain.usecases.recall import Recall
from mnemo_server.domain.usecases.writes import Writes

Context = grpc.aio.ServicerContext[Any, Any]


def _archived(user_id: str, saved: tuple[SavedMemory, ...]) -> list[str]:
    """The names of the entries a save archived, in the order of the drafts."""
    return [memory_name(user_id, m) for one in saved for m in one.archived_ids]


MEMORIES = pagination.Listing("ListMemories", keyset=(int, str))
VERSIONS = pagination.Listing("ListMemoryVersions", keyset=(int, str, int))
CANDIDATES = pagination.Listing("ListMemoryCandidates", keyset=(int, str))


class MemoryServicer(pb_grpc.MemoryServiceServicer):
    """The gecx-chat long-term memory over gRPC."""

    def __init__(
        self,
        memories: Memories,
        recall: Recall,
        extraction: Extraction,
        writes: Writes,
        settings: Settings,
    ) -> None:
        self._memories = memories
        self._writes = writes
        self._recall = recall
        self._extraction = extraction
        self._settings = settings

    # ---------------------------------------------------------------- entries

    async def CreateMemory(
        self, request: pb.CreateMemoryRequest, context: Context
    ) -> pb.CreateMemoryResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        draft = requests.draft_of(v, request.memory, "memory", user_id, scope)
        origin = requests.origin_of(
            v, request.origin_conversation, "origin_conversation", user_id, scope
        )
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        with requests.CREATE_FIELDS.naming():
            written = await self._memories.create(
                CreateMemories(
                    caller=caller_of(scope),
                    user_id=user_id,
                    drafts=((request.memory_id or new_id(), draft),),
                    origin_conversation_ids=(origin,),
                    near_duplicates=request.near_duplicates
                    if request.HasField("near_duplicates")
                    else None,
                    idempotency=idempotency_of(request, "CreateMemory"),
                )
            )
        (saved,) = written.value
        response = pb.CreateMemoryResponse(
            archived=_archived(user_id, written.value),
            outcome=convert.OUTCOMES[saved.outcome],
            change_cursor=written.change_cursor,
        )
        convert.fill_memory(response.memory, saved.memory)
        return response

    async def BatchCreateMemories(
        self, request: pb.BatchCreateMemoriesRequest, context: Context
    ) -> pb.BatchCreateMemoriesResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        drafts = requests.batch_drafts_of(v, request, user_id, scope)
        origins = requests.batch_origins_of(v, request, user_id, scope)
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        with requests.BATCH_FIELDS.naming():
            written = await self._memories.create(
                CreateMemories(
                    caller=caller_of(scope),
                    user_id=user_id,
                    drafts=tuple((memory_id or new_id(), draft) for memory_id, draft in drafts),
                    origin_conversation_ids=origins,
                    near_duplicates=requests.batch_near_duplicates(request),
                    idempotency=idempotency_of(request, "BatchCreateMemories"),
                )
            )
        response = pb.BatchCreateMemoriesResponse(
            archived=_archived(user_id, written.value),
            outcomes=[convert.OUTCOMES[s.outcome] for s in written.value],
            change_cursor=written.change_cursor,
        )
        convert.add_memories(response.memories, tuple(s.memory for s in written.value))
        return response

    async def GetMemory(
        self, request: pb.GetMemoryRequest, context: Context
    ) -> pb.GetMemoryResponse:
        user_id, memory_id = requests.parse_memory(request.name, "name", current_scope())
        memory = await self._memories.get(user_id, memory_id)
        response = pb.GetMemoryResponse()
        convert.fill_memory(response.memory, memory)
        return response

    async def ListMemories(
        self, request: pb.ListMemoriesRequest, context: Context
    ) -> pb.ListMemoriesResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        paging = MEMORIES.page(v, request, requests.memory_filters(request))
        query = requests.list_query_of(
            v, request, user_id, scope, limit=paging.limit, after=paging.after
        )
        v.raise_if_invalid()
        page = await self._memories.list(user_id, query)
        response = pb.ListMemoriesResponse(next_page_token=paging.next_token(page.next_after))
        convert.add_memories(response.memories, page.items)
        return response

    async def UpdateMemory(
        self, request: pb.UpdateMemoryRequest, context: Context
    ) -> pb.UpdateMemoryResponse:
        scope = current_scope()
        v = Validator()
        user_id, memory_id = requests.memory_of(v, request.memory.name, "memory.name", scope)
        change = requests.change_of(v, request.memory, request.update_mask)
        origin = requests.origin_of(
            v, request.origin_conversation, "origin_conversation", user_id, scope
        )
        v.raise_if_invalid()
        with requests.UPDATE_FIELDS.naming():
            written = await self._memories.update(
                UpdateMemory(
                    caller=caller_of(scope),
                    user_id=user_id,
                    memory_id=memory_id,
                    change=change,
                    expected_etag=expected_etag(request.memory.etag),
                    origin_conversation_id=origin,
                )
            )
        return pb.UpdateMemoryResponse(
            memory=convert.memory_to_proto(written.value), change_cursor=written.change_cursor
        )

    async def DeleteMemory(
        self, request: pb.DeleteMemoryRequest, context: Context
    ) -> pb.DeleteMemoryResponse:
        scope = current_scope()
        v = Validator()
        user_id, memory_id = requests.memory_of(v, request.name, "name", scope)
        origin = requests.origin_of(
            v, request.origin_conversation, "origin_conversation", user_id, scope
        )
        v.raise_if_invalid()
        written = await self._writes(
            DeleteMemory(
                caller=caller_of(scope),
                user_id=user_id,
                memory_id=memory_id,
                expected_etag=expected_etag(request.etag),
                origin_conversation_id=origin,
            )
        )
        return pb.DeleteMemoryResponse(
            tombstone=convert.tombstone_to_proto(written.value),
            change_cursor=written.change_cursor,
        )

    async def ListMemoryVersions(
        self, request: pb.ListMemoryVersionsRequest, context: Context
    ) -> pb.ListMemoryVersionsResponse:
        v = Validator()
        user_id, memory_id = requests.memory_of(v, request.name, "name", current_scope())
        paging = VERSIONS.page(v, request, (request.name,))
        v.raise_if_invalid()
        page = await self._memories.versions(
            user_id, memory_id, limit=paging.limit, after=paging.after
        )
        return pb.ListMemoryVersionsResponse(
            versions=convert.memories_to_proto(page.items),
            next_page_token=paging.next_token(page.next_after),
        )

    # ----------------------------------------------------------------- recall

    async def RecallMemories(
        self, request: pb.RecallMemoriesRequest, context: Context
    ) -> AsyncIterator[pb.RecallMemoriesResponse]:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        query = requests.recall_query_of(v, request, user_id, scope)
        v.raise_if_invalid()
        with requests.RECALL_FIELDS.naming():
            hits = await self._recall.recall(caller_of(scope), user_id, query)
        for hit in hits:
            yield convert.hit_to_proto(hit)

    async def BuildContext(
        self, request: pb.BuildContextRequest, context: Context
    ) -> pb.BuildContextResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        query, max_entries, max_bytes = requests.context_query_of(v, request, user_id, scope)
        v.raise_if_invalid()
        with requests.RECALL_FIELDS.naming():
            built = await self._recall.build_context(
                caller_of(scope), user_id, query, max_entries=max_entries, max_bytes=max_bytes
            )
        return convert.context_to_proto(user_id, built)

    # ------------------------------------------------------------- candidates

    async def ExtractMemories(
        self, request: pb.ExtractMemoriesRequest, context: Context
    ) -> pb.ExtractMemoriesResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        conversation_id = requests.conversation_of(
            v, request.conversation, "conversation", user_id, scope
        )
        messages = messages_of(v, request.messages, "messages", self._settings, min_count=1)
        messages = message_event_times(v, request.messages, "messages", messages)
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        with requests.EXTRACT_FIELDS.naming():
            written = await self._extraction.extract(
                ExtractMemories(
                    caller=caller_of(scope),
                    user_id=user_id,
                    messages=tuple(messages),
                    conversation_id=conversation_id or "",
                    run_id=request.run_id,
                    turn=request.turn,
                    require_approval=request.require_approval,
                    idempotency=idempotency_of(request, "ExtractMemories"),
                )
            )
        extracted = written.value
        return pb.ExtractMemoriesResponse(
            candidates=convert.candidates_to_proto(extracted.candidates),
            memories=convert.memories_to_proto(extracted.memories),
            change_cursor=written.change_cursor,
        )

    async def ProposeMemoryCandidates(
        self, request: pb.ProposeMemoryCandidatesRequest, context: Context
    ) -> pb.ProposeMemoryCandidatesResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        requests.proposed_count(v, len(request.candidates))
        proposals: list[Proposal] = []
        for index, candidate in enumerate(request.candidates[: requests.MAX_PROPOSED_CANDIDATES]):
            field = f"candidates[{index}]"
            draft = requests.draft_of(
                v,
                candidate.memory,
                f"{field}.memory",
                user_id,
                scope,
                source=MemorySource.EXTRACTOR,
            )
            conversation_id = requests.conversation_of(
                v, candidate.conversation, f"{field}.conversation", user_id, scope
            )
            proposals.append(
                Proposal(
                    draft,
                    conversation_id or "",
                    candidate.run_id,
                    candidate.turn,
                    candidate.extractor,
                )
            )
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        written = await self._extraction.propose(
            ProposeCandidates(
                caller=caller_of(scope),
                user_id=user_id,
                candidates=candidate_drafts(proposals),
                idempotency=idempotency_of(request, "ProposeMemoryCandidates"),
            )
        )
        return pb.ProposeMemoryCandidatesResponse(
            candidates=convert.candidates_to_proto(written.value),
            change_cursor=written.change_cursor,
        )

    async def ListMemoryCandidates(
        self, request: pb.ListMemoryCandidatesRequest, context: Context
    ) -> pb.ListMemoryCandidatesResponse:
        v = Validator()
        user_id = user_of(v, request.parent, "parent", current_scope())
        paging = CANDIDATES.page(v, request, (request.parent, str(request.include_resolved)))
        v.raise_if_invalid()
        page = await self._extraction.list(
            user_id,
            include_resolved=request.include_resolved,
            limit=paging.limit,
            after=paging.after,
        )
        return pb.ListMemoryCandidatesResponse(
            candidates=convert.candidates_to_proto(page.items),
            next_page_token=paging.next_token(page.next_after),
        )

    async def ApproveMemoryCandidate(
        self, request: pb.ApproveMemoryCandidateRequest, context: Context
    ) -> pb.ApproveMemoryCandidateResponse:
        scope = current_scope()
        user_id, candidate_id = requests.parse_candidate(request.name, "name", scope)
        with requests.APPROVE_FIELDS.naming():
            written = await self._writes(
                ApproveCandidate(
                    caller=caller_of(scope),
                    user_id=user_id,
                    candidate_id=candidate_id,
                    memory_id=new_id(),
                )
            )
        memory, candidate = written.value
        return pb.ApproveMemoryCandidateResponse(
            memory=convert.memory_to_proto(memory),
            candidate=convert.candidate_to_proto(candidate),
            change_cursor=written.change_cursor,
        )

    async def RejectMemoryCandidate(
        self, request: pb.RejectMemoryCandidateRequest, context: Context
    ) -> pb.RejectMemoryCandidateResponse:
        scope = current_scope()
        user_id, candidate_id = requests.parse_candidate(request.name, "name", scope)
        written = await self._writes(
            RejectCandidate(caller=caller_of(scope), user_id=user_id, candidate_id=candidate_id)
        )
        return pb.RejectMemoryCandidateResponse(
            candidate=convert.candidate_to_proto(written.value),
            change_cursor=written.change_cursor,
        )
