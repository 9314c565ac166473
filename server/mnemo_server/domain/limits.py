"""The documented size limits of long-term memory, and the draft validator.

Limits (all byte counts are UTF-8):

- ``text``: required, not blank, at most ``MAX_TEXT_BYTES`` (4096) bytes;
- ``key``: optional, at most ``MAX_KEY_BYTES`` (256) bytes;
- ``metadata``: at most ``MAX_METADATA_ENTRIES`` (32) entries and
  ``MAX_METADATA_BYTES`` (4096) bytes in all (every key plus every value);
  keys are not empty;
- ``embedding``: a non-empty ``model`` of at most ``MAX_MODEL_BYTES`` (256)
  bytes and 1 to ``MAX_EMBEDDING_DIMENSIONS`` (4096) values finite in float32,
  not all 0 (``domain.vectors.values_problem``);
- no string may contain NUL (PostgreSQL text cannot hold it); ``key`` and
  metadata keys may not contain control characters;
- conversation scope needs a conversation; identity scope must not have one.

Each problem names the ``part`` of the draft it is about, as the path of
``Memory``'s field ("text", "metadata", "metadata['k']", "embedding.values",
"conversation"); the API layer puts it under the request's path of the entry
(``api.memories.rules``), so the domain names no request field.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mnemo_server.domain.clock import now_micros
from mnemo_server.domain.memory_models import Embedding, MemoryDraft, MemoryScope
from mnemo_server.domain.vectors import values_problem

MAX_TEXT_BYTES = 4096
MAX_KEY_BYTES = 256
MAX_METADATA_ENTRIES = 32
MAX_METADATA_BYTES = 4096
MAX_MODEL_BYTES = 256
MAX_EMBEDDING_DIMENSIONS = 4096


@dataclass(frozen=True)
class DraftProblem:
    """What is wrong with ``part`` of a draft; ``too_large``: a size limit
    (``limit``) is exceeded."""

    part: str
    description: str
    too_large: bool = False
    limit: int = 0


def _utf8_size(value: str) -> int | None:
    """UTF-8 size, or ``None`` when ``value`` holds lone surrogates."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def _has_control(value: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in value)


def _string_problems(
    value: str, path: str, *, max_bytes: int, allow_control: bool
) -> list[DraftProblem]:
    size = _utf8_size(value)
    if size is None:
        return [DraftProblem(path, "must be valid UTF-8")]
    problems: list[DraftProblem] = []
    if "\x00" in value:
        problems.append(DraftProblem(path, "must not contain NUL"))
    elif not allow_control and _has_control(value):
        problems.append(DraftProblem(path, "must not contain control characters"))
    if size > max_bytes:
        problems.append(
            DraftProblem(
                path,
                f"at most {max_bytes} bytes of UTF-8 (got {size})",
                too_large=True,
                limit=max_bytes,
            )
        )
    return problems


def _text_problems(text: str, path: str) -> list[DraftProblem]:
    if not text.strip():
        return [DraftProblem(path, "is required and must not be blank")]
    return _string_problems(text, path, max_bytes=MAX_TEXT_BYTES, allow_control=True)


def _metadata_problems(metadata: Mapping[str, str], path: str) -> list[DraftProblem]:
    problems: list[DraftProblem] = []
    if len(metadata) > MAX_METADATA_ENTRIES:
        problems.append(
            DraftProblem(
                path,
                f"at most {MAX_METADATA_ENTRIES} entries (got {len(metadata)})",
                too_large=True,
                limit=MAX_METADATA_ENTRIES,
            )
        )
    total = 0
    for key, value in sorted(metadata.items()):
        entry = f"{path}[{key!r}]"
        if not key:
            problems.append(DraftProblem(path, "keys must not be empty"))
        for part, allow_control in ((key, False), (value, True)):
            found = _string_problems(
                part, entry, max_bytes=MAX_METADATA_BYTES, allow_control=allow_control
            )
            # The total below reports size; keep only the per-string format problems.
            problems.extend(p for p in found if not p.too_large)
            total += _utf8_size(part) or 0
    if total > MAX_METADATA_BYTES:
        problems.append(
            DraftProblem(
                path,
                f"at most {MAX_METADATA_BYTES} bytes of keys and values in all (got {total})",
                too_large=True,
                limit=MAX_METADATA_BYTES,
            )
        )
    return problems


def embedding_problems(embedding: Embedding, path: str = "") -> list[DraftProblem]:
    """Every problem of ``embedding``, its parts ``model`` and ``values``
    (under ``path``, e.g. ``embedding``, when given)."""
    at = f"{path}." if path else ""
    problems: list[DraftProblem] = []
    if not embedding.model.strip():
        problems.append(DraftProblem(f"{at}model", "is required"))
    else:
        problems.extend(
            _string_problems(
                embedding.model, f"{at}model", max_bytes=MAX_MODEL_BYTES, allow_control=False
            )
        )
    values = embedding.values
    values_path = f"{at}values"
    if not values:
        problems.append(DraftProblem(values_path, "needs at least 1 value"))
    elif len(values) > MAX_EMBEDDING_DIMENSIONS:
        problems.append(
            DraftProblem(
                values_path,
                f"at most {MAX_EMBEDDING_DIMENSIONS} values (got {len(values)})",
                too_large=True,
                limit=MAX_EMBEDDING_DIMENSIONS,
            )
        )
    problem = values_problem(values)
    if problem is not None:
        problems.append(DraftProblem(values_path, problem))
    return problems


def draft_problems(draft: MemoryDraft) -> list[DraftProblem]:
    """Every problem of ``draft``, in field order; empty when it is valid."""
    problems = _text_problems(draft.text, "text")
    problems += _string_problems(draft.key, "key", max_bytes=MAX_KEY_BYTES, allow_control=False)
    if draft.scope is MemoryScope.CONVERSATION and not draft.conversation_id:
        problems.append(DraftProblem("conversation", "is required with conversation scope"))
    if draft.scope is MemoryScope.IDENTITY and draft.conversation_id:
        problems.append(
            DraftProblem(
                "conversation", "must be empty with identity scope (use conversation scope)"
            )
        )
    problems += _metadata_problems(draft.metadata, "metadata")
    if draft.embedding is not None:
        problems += embedding_problems(draft.embedding, "embedding")
    if draft.event_time is not None:
        problems += event_time_problems(draft.event_time, "event_time")
    return problems


MAX_EVENT_TIME_AHEAD_SECONDS = 86_400
"""How far ahead of the server's clock an entry's event time may be (clocks
of devices drift; a fact from the future is a bug)."""


def event_time_problems(value: datetime, part: str) -> list[DraftProblem]:
    """An event time before 1970 or more than a day ahead of the server's clock."""
    micros = (value - _EPOCH) // timedelta(microseconds=1)
    if micros < 0:
        return [DraftProblem(part, "must not be before 1970-01-01T00:00:00Z")]
    if micros > now_micros() + MAX_EVENT_TIME_AHEAD_SECONDS * 1_000_000:
        return [DraftProblem(part, "must not be more than 24 hours ahead of the server's clock")]
    return []


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
