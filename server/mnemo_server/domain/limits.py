"""The documented size limits of long-term memory, and the draft validator.

Limits (all byte counts are UTF-8):

- ``text``: required, not blank, at most ``MAX_TEXT_BYTES`` (4096) bytes;
- ``key``: optional, at most ``MAX_KEY_BYTES`` (256) bytes;
- ``metadata``: at most ``MAX_METADATA_ENTRIES`` (32) entries and
  ``MAX_METADATA_BYTES`` (4096) bytes in all (every key plus every value);
  keys are not empty;
- ``embedding``: a non-empty ``model`` of at most ``MAX_MODEL_BYTES`` (256)
  bytes and 1 to ``MAX_EMBEDDING_DIMENSIONS`` (4096) finite values, not all 0;
- no string may contain NUL (PostgreSQL text cannot hold it); ``key`` and
  metadata keys may not contain control characters;
- conversation scope needs a conversation; identity scope must not have one.

Field paths are those of the proto (``memory.text``, ``memory.metadata``,
``memory.embedding.values``, ``memory.conversation``) under a caller-chosen
prefix, so a candidate can be checked as ``candidates[2].memory``.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.memory_models import Embedding, MemoryDraft, MemoryScope

MAX_TEXT_BYTES = 4096
MAX_KEY_BYTES = 256
MAX_METADATA_ENTRIES = 32
MAX_METADATA_BYTES = 4096
MAX_MODEL_BYTES = 256
MAX_EMBEDDING_DIMENSIONS = 4096


@dataclass(frozen=True)
class _Problem:
    violation: FieldViolation
    too_large: bool
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
) -> list[_Problem]:
    size = _utf8_size(value)
    if size is None:
        return [_Problem(FieldViolation(path, "must be valid UTF-8"), too_large=False)]
    problems: list[_Problem] = []
    if "\x00" in value:
        problems.append(_Problem(FieldViolation(path, "must not contain NUL"), too_large=False))
    elif not allow_control and _has_control(value):
        problems.append(
            _Problem(FieldViolation(path, "must not contain control characters"), too_large=False)
        )
    if size > max_bytes:
        problems.append(
            _Problem(
                FieldViolation(path, f"at most {max_bytes} bytes of UTF-8 (got {size})"),
                too_large=True,
                limit=max_bytes,
            )
        )
    return problems


def _text_problems(text: str, path: str) -> list[_Problem]:
    if not text.strip():
        return [_Problem(FieldViolation(path, "is required and must not be blank"), False)]
    return _string_problems(text, path, max_bytes=MAX_TEXT_BYTES, allow_control=True)


def _metadata_problems(metadata: Mapping[str, str], path: str) -> list[_Problem]:
    problems: list[_Problem] = []
    if len(metadata) > MAX_METADATA_ENTRIES:
        problems.append(
            _Problem(
                FieldViolation(
                    path, f"at most {MAX_METADATA_ENTRIES} entries (got {len(metadata)})"
                ),
                too_large=True,
                limit=MAX_METADATA_ENTRIES,
            )
        )
    total = 0
    for key, value in sorted(metadata.items()):
        entry = f"{path}[{key!r}]"
        if not key:
            problems.append(_Problem(FieldViolation(path, "keys must not be empty"), False))
        for part, allow_control in ((key, False), (value, True)):
            found = _string_problems(
                part, entry, max_bytes=MAX_METADATA_BYTES, allow_control=allow_control
            )
            # The total below reports size; keep only the per-string format problems.
            problems.extend(p for p in found if not p.too_large)
            total += _utf8_size(part) or 0
    if total > MAX_METADATA_BYTES:
        problems.append(
            _Problem(
                FieldViolation(
                    path,
                    f"at most {MAX_METADATA_BYTES} bytes of keys and values in all (got {total})",
                ),
                too_large=True,
                limit=MAX_METADATA_BYTES,
            )
        )
    return problems


def embedding_violations(embedding: Embedding, path: str) -> list[FieldViolation]:
    """Every problem of ``embedding`` (``path`` is e.g. ``memory.embedding``)."""
    return [p.violation for p in _embedding_problems(embedding, path)]


def _embedding_problems(embedding: Embedding, path: str) -> list[_Problem]:
    problems: list[_Problem] = []
    if not embedding.model.strip():
        problems.append(_Problem(FieldViolation(f"{path}.model", "is required"), False))
    else:
        problems.extend(
            _string_problems(
                embedding.model, f"{path}.model", max_bytes=MAX_MODEL_BYTES, allow_control=False
            )
        )
    values = embedding.values
    values_path = f"{path}.values"
    if not values:
        problems.append(_Problem(FieldViolation(values_path, "needs at least 1 value"), False))
    elif len(values) > MAX_EMBEDDING_DIMENSIONS:
        problems.append(
            _Problem(
                FieldViolation(
                    values_path,
                    f"at most {MAX_EMBEDDING_DIMENSIONS} values (got {len(values)})",
                ),
                too_large=True,
                limit=MAX_EMBEDDING_DIMENSIONS,
            )
        )
    if not all(math.isfinite(v) for v in values):
        problems.append(_Problem(FieldViolation(values_path, "values must be finite"), False))
    elif values and not any(values):
        problems.append(
            _Problem(FieldViolation(values_path, "must not be all zeros"), too_large=False)
        )
    return problems


def _draft_problems(draft: MemoryDraft, prefix: str) -> list[_Problem]:
    problems = _text_problems(draft.text, f"{prefix}.text")
    problems += _string_problems(
        draft.key, f"{prefix}.key", max_bytes=MAX_KEY_BYTES, allow_control=False
    )
    if draft.scope is MemoryScope.CONVERSATION and not draft.conversation_id:
        problems.append(
            _Problem(
                FieldViolation(f"{prefix}.conversation", "is required with conversation scope"),
                False,
            )
        )
    if draft.scope is MemoryScope.IDENTITY and draft.conversation_id:
        problems.append(
            _Problem(
                FieldViolation(
                    f"{prefix}.conversation",
                    "must be empty with identity scope (use conversation scope)",
                ),
                False,
            )
        )
    problems += _metadata_problems(draft.metadata, f"{prefix}.metadata")
    if draft.embedding is not None:
        problems += _embedding_problems(draft.embedding, f"{prefix}.embedding")
    return problems


def memory_draft_violations(draft: MemoryDraft, *, prefix: str = "memory") -> list[FieldViolation]:
    """Every violation of ``draft``, in field order; empty when it is valid."""
    return [p.violation for p in _draft_problems(draft, prefix)]


def check_memory_draft(draft: MemoryDraft, *, prefix: str = "memory") -> None:
    """Raise ``InvalidArgument`` listing every violation of ``draft``.

    The reason is ``FIELD_TOO_LARGE`` when every violation is a size limit
    (metadata ``field`` and ``limit`` name the first one) and
    ``INVALID_FIELD`` otherwise (metadata ``fields`` lists the paths).
    Returns ``None`` for a valid draft.
    """
    problems = _draft_problems(draft, prefix)
    if not problems:
        return
    violations = tuple(p.violation for p in problems)
    fields = ",".join(dict.fromkeys(v.field for v in violations))
    if all(p.too_large for p in problems):
        first = problems[0]
        raise InvalidArgument(
            f"{first.violation.field}: {first.violation.description}; shorten it",
            reason="FIELD_TOO_LARGE",
            metadata={"field": first.violation.field, "limit": str(first.limit)},
            violations=violations,
        )
    summary = "; ".join(f"{v.field} {v.description}" for v in violations)
    raise InvalidArgument(
        f"invalid memory: {summary}",
        reason="INVALID_FIELD",
        metadata={"fields": fields},
        violations=violations,
    )
