"""MemoryService request rules: the static table.

``RULES`` holds the static rules of each request's scalar fields, in field
order (``api.validation.check_fields`` applies them). The rules of an entry
itself (``Memory``: text, key, metadata, vector) are the domain's
(``domain.limits``), reported under the request's path of the entry by
``api.memories.requests``; names, enums, page tokens and the SDK-native
messages of ``ExtractMemories`` (limits from ``Settings``,
``api.conversations.rules.messages``) are checked beside them on the same
``Validator``.
"""

from __future__ import annotations

from mnemo.v1 import memories_pb2 as pb
from mnemo_server.api import names
from mnemo_server.api.validation import (
    MAX_TEXT_BYTES,
    FieldRule,
    Rules,
    identifier,
    max_bytes,
    non_negative,
    pattern,
    text,
)
from mnemo_server.domain.limits import MAX_KEY_BYTES

ID_RULE = "must be 1-128 characters of A-Z a-z 0-9 . _ ~ : - starting with a letter or digit"
MAX_QUERY_BYTES = MAX_TEXT_BYTES
"""A recall query may be a whole outbound message."""

_QUERY = (FieldRule("query", text(MAX_QUERY_BYTES)),)

RULES: Rules = {
    pb.CreateMemoryRequest: (
        FieldRule("memory_id", pattern(names.ID_PATTERN, ID_RULE)),
        FieldRule("request_id", identifier()),
    ),
    pb.BatchCreateMemoriesRequest: (
        FieldRule("requests[].memory_id", pattern(names.ID_PATTERN, ID_RULE)),
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
