"""ConversationService request rules: the static table, and the rules that
depend on ``Settings`` beside it.

``RULES`` holds every static rule of a request's scalar fields, in field
order (``api.validation.check_fields`` applies them); names (authorized by
the call's scope), metadata and SDK-native messages are checked by the
servicer and ``messages`` below, on the same ``Validator``, so a request's
problems are reported at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from mnemo.v1 import conversations_pb2 as pb
from mnemo_server.api.validation import (
    MAX_ID_CHARS,
    MAX_TEXT_BYTES,
    FieldRule,
    Rules,
    Validator,
    between,
    client_id,
    identifier,
    json_text,
    non_negative,
    position,
    required,
    text,
)
from mnemo_server.domain.compaction import revision_parts
from mnemo_server.domain.errors import FieldViolation, InvalidArgument, Part

MAX_POP = 1000
"""Messages one PopMessages may remove."""


RUN_ERROR = (
    FieldRule("error.message", text(MAX_TEXT_BYTES, required=True)),
    FieldRule("error.code", text(MAX_ID_CHARS)),
    FieldRule("error.details_json", json_text(MAX_TEXT_BYTES)),
)
"""A failed run's ``RunError``, as recorded and as imported."""

RULES: Rules = {
    pb.CreateConversationRequest: (
        FieldRule("conversation_id", client_id()),
        FieldRule("request_id", identifier()),
    ),
    pb.AppendMessagesRequest: (
        FieldRule("run_id", identifier()),
        FieldRule("turn", non_negative()),
        FieldRule("request_id", identifier()),
        FieldRule("expected_position", position(), when_set=True),
    ),
    pb.PopMessagesRequest: (
        FieldRule("count", between(1, MAX_POP)),
        FieldRule("expected_next_position", position(), when_set=True),
        FieldRule("request_id", identifier()),
    ),
    pb.ListMessagesRequest: (FieldRule("start_position", position()),),
    pb.StreamMessagesRequest: (FieldRule("start_position", position()),),
    pb.RecordFailedRunRequest: (
        FieldRule("run_id", identifier(required=True)),
        *RUN_ERROR,
        FieldRule("request_id", identifier()),
    ),
    pb.ReplaceHistoryPrefixRequest: (
        FieldRule("revision", required()),
        FieldRule("message_count", position(minimum=1)),
        FieldRule("run_id", identifier()),
        FieldRule("request_id", identifier()),
    ),
}


def _foreign_revision(field: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field} is not a revision returned by SnapshotHistory; take a new snapshot",
        reason="INVALID_FIELD",
        violations=(FieldViolation(field, "not a revision this server issued"),),
    )


def revision_of(v: Validator, value: str, field: str) -> tuple[int, int] | None:
    """The ``(generation, sequence)`` of a revision we issued; else an
    ``INVALID_FIELD`` for ``field`` and ``None``."""
    parts = revision_parts(value)
    if parts is None:
        v.add(_foreign_revision(field))
    return parts


@contextmanager
def compaction_named(message_count: int) -> Iterator[None]:
    """Raise the store's errors of the block about ``ReplaceHistoryPrefix``'s
    inputs (``Entry`` ``MESSAGE_COUNT``, ``REVISION``) for the request's fields."""
    try:
        yield
    except InvalidArgument as error:
        part = None if error.entry is None else error.entry.part
        if part is Part.REVISION:
            raise _foreign_revision("revision") from None
        if part is not Part.MESSAGE_COUNT:
            raise
        size = error.metadata["limit"]
        raise replace(
            error,
            message=f"message_count must be between 1 and the projection size {size}",
            violations=(
                FieldViolation("message_count", f"must be in 1..{size} (got {message_count})"),
            ),
        ) from None
