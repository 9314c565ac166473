"""WorkingMemoryService request rules: the static table, and the rules that
depend on ``Settings`` beside it (the summary word budget, the default and
largest ``keep_recent``, the largest saved ``recent`` list).

``RULES`` is applied by ``api.validation.check_fields``; the settings rules
run after it, once the request's static problems are reported.
"""

from __future__ import annotations

from mnemo.v1 import working_memory_pb2 as pb
from mnemo_server.api.validation import (
    MAX_SUMMARY_BYTES,
    MAX_TEXT_BYTES,
    FieldRule,
    Rules,
    identifier,
    text,
    timestamp,
)
from mnemo_server.config import Settings
from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.working_memory import count_words


def exchange(path: str) -> tuple[FieldRule, FieldRule]:
    """The rules of an ``Exchange``'s texts at ``path`` (saved, remembered, imported)."""
    return (
        FieldRule(f"{path}.ask", text(MAX_TEXT_BYTES, required=True)),
        FieldRule(f"{path}.answer", text(MAX_TEXT_BYTES)),
    )


SUMMARY = text(MAX_SUMMARY_BYTES)

RULES: Rules = {
    pb.SaveMemoryStateRequest: (
        FieldRule("memory_state.summary", SUMMARY),
        *exchange("memory_state.recent[]"),
        FieldRule("memory_state.recent[].at", timestamp(), when_set=True),
    ),
    pb.RememberExchangeRequest: (
        *exchange("exchange"),
        FieldRule("exchange.at", timestamp(), when_set=True),
        FieldRule("summary", SUMMARY, when_set=True),
        FieldRule("request_id", identifier()),
    ),
}


# ------------------------------------------------------------ from settings


def keep_recent(requested: int, settings: Settings, field: str = "keep_recent") -> int:
    """0 -> the server default; 1..recent_max as asked; else ``INVALID_FIELD``."""
    if requested == 0:
        return settings.recent_default
    if not 1 <= requested <= settings.recent_max:
        limit = settings.recent_max
        raise InvalidArgument(
            f"{field} must be between 1 and {limit} (0 means the default "
            f"{settings.recent_default}); got {requested}",
            reason="INVALID_FIELD",
            metadata={"field": field, "max": str(limit)},
            violations=(FieldViolation(field, f"must be in 0..{limit}"),),
        )
    return requested


def recent_count(count: int, settings: Settings) -> None:
    """A saved ``recent`` list holds at most ``recent_max`` exchanges (``FIELD_TOO_LARGE``)."""
    limit = settings.recent_max
    if count > limit:
        raise InvalidArgument(
            f"memory_state.recent has {count} exchanges; at most {limit} are kept",
            reason="FIELD_TOO_LARGE",
            metadata={"field": "memory_state.recent", "limit": str(limit)},
            violations=(FieldViolation("memory_state.recent", f"at most {limit} exchanges"),),
        )


def summary_budget(summary: str, settings: Settings, field: str) -> None:
    """At most ``summary_max_words`` words, else ``SUMMARY_OVER_BUDGET``: the
    summary is never truncated, the scribe that wrote it must shorten it."""
    max_words = settings.summary_max_words
    words = count_words(summary)
    if words > max_words:
        raise InvalidArgument(
            f"{field} has {words} words; the budget is {max_words}: shorten the summary",
            reason="SUMMARY_OVER_BUDGET",
            metadata={"max_words": str(max_words), "words": str(words)},
            violations=(FieldViolation(field, f"at most {max_words} words (got {words})"),),
        )
