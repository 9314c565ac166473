"""The static rules of an import's records (``ExportRecord`` members), one
table keyed by record type, applied under ``records[i].<kind>`` by
``api.validation.check_fields``. Where a record holds what an RPC writes,
its rules are that RPC's (the shared pieces of ``api.conversations.rules``,
``api.working_memory.rules``); names, times, enums and derived values are
checked by ``api.user_data.records``."""

from __future__ import annotations

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import working_memory_pb2 as wm
from mnemo_server.api.conversations.rules import RUN_ERROR
from mnemo_server.api.validation import (
    MAX_TEXT_BYTES,
    Check,
    FieldRule,
    Rules,
    Validator,
    identifier,
    non_negative,
    text,
)
from mnemo_server.api.working_memory.rules import SUMMARY, exchange
from mnemo_server.domain.limits import MAX_KEY_BYTES

MAX_ETAG_CHARS = 32
"""The stored etag's size (``schema.ETAG``)."""


def _etag(v: Validator, value: str, field: str) -> None:
    v.identifier(value, field)
    v.max_chars(value, field, MAX_ETAG_CHARS)


ETAG: Check = _etag
_RUN = (FieldRule("run_id", identifier()), FieldRule("turn", non_negative()))

RECORD_RULES: Rules = {
    cv.Conversation: (FieldRule("etag", ETAG),),
    wm.MemoryState: (
        FieldRule("summary", SUMMARY),
        *exchange("recent[]"),
        FieldRule("etag", ETAG),
    ),
    cv.HistoryMessage: _RUN,
    gv.CompactionCheckpoint: (
        FieldRule("covered", non_negative()),
        FieldRule("run_id", identifier()),
    ),
    cv.FailedRun: (FieldRule("run_id", identifier(required=True)), *RUN_ERROR),
    mm.Memory: (FieldRule("etag", ETAG),),
    mm.MemoryTombstone: (FieldRule("key", text(MAX_KEY_BYTES)),),
    mm.MemoryCandidate: (*_RUN, FieldRule("extractor", text(MAX_TEXT_BYTES))),
    gv.Consent: (FieldRule("policy_version", identifier()),),
    gv.MemorySettings: (FieldRule("etag", ETAG),),
}
