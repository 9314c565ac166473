"""MemoryService request rules: the static table, and an entry's rules
under the request's path of the entry.

``RULES`` holds the static rules of each request's scalar fields, in field
order (``api.validation.check_fields`` applies them). The rules of an entry
itself (``Memory``: text, key, metadata, vector) are the domain's
(``domain.limits``), reported under the request's path of the entry by
``api.memories.requests``; names, enums, page tokens and the SDK-native
messages of ``ExtractMemories`` (limits from ``Settings``,
``api.validation.messages_of``) are checked beside them on the same
``Validator``.
"""

from __future__ import annotations

from mnemo.v1 import memories_pb2 as pb
from mnemo_server.api.validation import (
    MAX_TEXT_BYTES,
    FieldRule,
    Rules,
    client_id,
    identifier,
    max_bytes,
    non_negative,
    text,
)
from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.limits import (
    MAX_KEY_BYTES,
    DraftProblem,
    draft_problems,
    embedding_problems,
)
from mnemo_server.domain.memory_models import Embedding, MemoryDraft

MAX_QUERY_BYTES = MAX_TEXT_BYTES
"""A recall query may be a whole outbound message."""

_QUERY = (FieldRule("query", text(MAX_QUERY_BYTES)),)

RULES: Rules = {
    pb.CreateMemoryRequest: (
        FieldRule("memory_id", client_id()),
        FieldRule("request_id", identifier()),
    ),
    pb.BatchCreateMemoriesRequest: (
        FieldRule("requests[].memory_id", client_id()),
        FieldRule("request_id", identifier()),
    ),
    pb.ListMemoriesRequest: (FieldRule("key", max_bytes(MAX_KEY_BYTES)),),
    pb.RecallMemoriesRequest: _QUERY,
    pb.BuildContextRequest: _QUERY,
    pb.ExtractMemoriesRequest: (
        FieldRule("run_id", identifier()),
        FieldRule("turn", non_negative()),
        FieldRule("request_id", identifier()),
    ),
    pb.ProposeMemoryCandidatesRequest: (
        FieldRule("candidates[].run_id", identifier()),
        FieldRule("candidates[].turn", non_negative()),
        FieldRule("candidates[].extractor", identifier()),
        FieldRule("request_id", identifier()),
    ),
}


# ---------------------------------------------------------------- entries


def _violations(problems: list[DraftProblem], prefix: str) -> tuple[FieldViolation, ...]:
    return tuple(FieldViolation(f"{prefix}.{p.part}", p.description) for p in problems)


def embedding_violations(embedding: Embedding, path: str) -> list[FieldViolation]:
    """Every problem of a vector at ``path`` (e.g. ``query_embedding``)."""
    return list(_violations(embedding_problems(embedding), path))


def memory_draft_violations(draft: MemoryDraft, *, prefix: str = "memory") -> list[FieldViolation]:
    """Every violation of ``draft`` (``domain.limits``) under the request's
    path of the entry (``memory``, ``requests[2].memory``), in field order."""
    return list(_violations(draft_problems(draft), prefix))


def check_memory_draft(draft: MemoryDraft, *, prefix: str = "memory") -> None:
    """Raise ``InvalidArgument`` listing every violation of ``draft`` under ``prefix``.

    The reason is ``FIELD_TOO_LARGE`` when every violation is a size limit
    (metadata ``field`` and ``limit`` name the first one) and
    ``INVALID_FIELD`` otherwise (metadata ``fields`` lists the paths).
    Returns ``None`` for a valid draft.
    """
    problems = draft_problems(draft)
    if not problems:
        return
    violations = _violations(problems, prefix)
    fields = ",".join(dict.fromkeys(v.field for v in violations))
    if all(p.too_large for p in problems):
        first = violations[0]
        raise InvalidArgument(
            f"{first.field}: {first.description}; shorten it",
            reason="FIELD_TOO_LARGE",
            metadata={"field": first.field, "limit": str(problems[0].limit)},
            violations=violations,
        )
    summary = "; ".join(f"{v.field} {v.description}" for v in violations)
    raise InvalidArgument(
        f"invalid memory: {summary}",
        reason="INVALID_FIELD",
        metadata={"fields": fields},
        violations=violations,
    )
