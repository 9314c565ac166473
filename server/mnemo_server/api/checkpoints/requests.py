"""CheckpointService requests -> validated domain values, at the edge.

Names: a thread is ``users/{user}/threads/{thread}`` (``thread`` an id of
``api.names``: LangGraph's uuid thread ids fit); ``PruneThreads`` and
``DeleteCheckpointsForRuns`` take the user, ``users/{user}``. A checkpoint id
and a write's ``task_id`` are identifiers of at most 128 characters; a
namespace, channel and task path at most ``MAX_NAMESPACE_CHARS``; the
metadata a JSON object of at most ``MAX_CHECKPOINT_METADATA_BYTES``. A
metadata filter's values are JSON texts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mnemo.v1 import checkpoints_pb2 as pb
from mnemo_server.api import names
from mnemo_server.api.checkpoints.convert import checkpoint_from_proto
from mnemo_server.api.validation import Validator
from mnemo_server.auth.caller import CallScope
from mnemo_server.domain.checkpoints import (
    MAX_CHECKPOINT_METADATA_BYTES,
    MAX_NAMESPACE_CHARS,
    MAX_WRITES_PER_CALL,
    StoredCheckpoint,
    ThreadKey,
)

THREAD_PATTERN = "users/{user}/threads/{thread}"
_THREAD = re.compile(rf"users/({names.ID_PATTERN})/threads/({names.ID_PATTERN})")
_NO_THREAD = ThreadKey("", "")
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def parse_thread(value: str, field: str, scope: CallScope | None) -> ThreadKey:
    """``users/{user}/threads/{thread}`` -> its key. Raises ``INVALID_NAME``, ``NotFound``."""
    user_id, thread_id = names.owned_ids(value, field, _THREAD, THREAD_PATTERN, scope)
    return ThreadKey(user_id, thread_id)


def thread(v: Validator, value: str, field: str, scope: CallScope | None) -> ThreadKey:
    """``parse_thread``, the error collected in ``v``."""
    return v.attempt(lambda: parse_thread(value, field, scope), _NO_THREAD)


def short_text(v: Validator, value: str, field: str, *, required: bool = False) -> None:
    """At most ``MAX_NAMESPACE_CHARS`` characters, no NUL (a UTF-8 character
    is at most 4 bytes, so the byte limit never fires first)."""
    v.text(value, field, MAX_NAMESPACE_CHARS * 4, required=required)
    v.max_chars(value, field, MAX_NAMESPACE_CHARS)


def checkpoint_keys(v: Validator, checkpoint_ns: str, checkpoint_id: str, prefix: str = "") -> None:
    """The namespace and id of a checkpoint (the id may be empty here)."""
    short_text(v, checkpoint_ns, f"{prefix}checkpoint_ns")
    v.identifier(checkpoint_id, f"{prefix}checkpoint_id")


def checkpoint(v: Validator, value: pb.Checkpoint, prefix: str = "checkpoint") -> None:
    """A checkpoint to store: id required, metadata a JSON object."""
    checkpoint_keys(v, value.checkpoint_ns, value.checkpoint_id, f"{prefix}.")
    v.required(value.checkpoint_id, f"{prefix}.checkpoint_id")
    v.identifier(value.parent_checkpoint_id, f"{prefix}.parent_checkpoint_id")
    v.identifier(value.type, f"{prefix}.type")
    metadata(v, value.metadata_json, f"{prefix}.metadata_json")


def metadata(v: Validator, value: str, field: str) -> None:
    """A JSON object of at most ``MAX_CHECKPOINT_METADATA_BYTES`` (``""``: ``{}``)."""
    if not value:
        return
    v.text(value, field, MAX_CHECKPOINT_METADATA_BYTES)
    try:
        parsed = json.loads(value)
    except ValueError:
        v.invalid(field, "must be a JSON object")
        return
    if not isinstance(parsed, dict):
        v.invalid(field, "must be a JSON object")


def writes(v: Validator, values: Any, field: str = "writes") -> None:
    """The writes of one call: at most ``MAX_WRITES_PER_CALL``, each with a
    task id and a channel."""
    v.max_items(len(values), field, MAX_WRITES_PER_CALL)
    for index, write in enumerate(values[: MAX_WRITES_PER_CALL + 1]):
        item = f"{field}[{index}]"
        v.identifier(write.task_id, f"{item}.task_id", required=True)
        short_text(v, write.channel, f"{item}.channel", required=True)
        v.identifier(write.type, f"{item}.type")
        short_text(v, write.task_path, f"{item}.task_path")


def metadata_filter(v: Validator, values: Mapping[str, str], field: str) -> dict[str, Any]:
    """The filter with its values decoded (each must be JSON text)."""
    decoded: dict[str, Any] = {}
    for key in sorted(values):
        item = f"{field}[{key!r}]"
        short_text(v, key, item, required=True)
        try:
            decoded[key] = json.loads(values[key])
        except ValueError:
            v.invalid(item, "must be a JSON value (a string in quotes: '\"input\"')")
    return decoded


def page_size(value: int, v: Validator, field: str = "page_size") -> int:
    """0 -> the default; larger than the maximum is coerced; negative is invalid."""
    if value < 0:
        v.invalid(field, "must not be negative")
    if value <= 0:
        return DEFAULT_PAGE_SIZE
    return min(value, MAX_PAGE_SIZE)


def thread_ids(v: Validator, values: Any, field: str) -> tuple[str, ...]:
    """At most ``MAX_WRITES_PER_CALL`` thread ids (``api.names`` ids)."""
    v.max_items(len(values), field, MAX_WRITES_PER_CALL)
    for index, value in enumerate(values[: MAX_WRITES_PER_CALL + 1]):
        if not names.is_valid_id(value):
            v.invalid(f"{field}[{index}]", "must be a thread id (1-128 of A-Z a-z 0-9 . _ ~ : -)")
    return tuple(values)


def ids(v: Validator, values: Any, field: str) -> tuple[str, ...]:
    """At most ``MAX_WRITES_PER_CALL`` identifiers, each required."""
    v.max_items(len(values), field, MAX_WRITES_PER_CALL)
    for index, value in enumerate(values[: MAX_WRITES_PER_CALL + 1]):
        v.identifier(value, f"{field}[{index}]", required=True)
    return tuple(values)


def imported(v: Validator, user_id: str, value: pb.Checkpoint, prefix: str) -> StoredCheckpoint:
    """An ``ExportRecord.checkpoint`` of an import into ``user_id``: a thread
    of that user, the checkpoint's rules, its writes' rules (the record's
    ``create_time`` kept when set)."""
    key = _NO_THREAD
    match = _THREAD.fullmatch(value.thread_name)
    if match is None or match.group(1) != user_id:
        v.add(
            names.invalid_name(
                value.thread_name, f"{prefix}.thread_name", f"users/{user_id}/threads/{{thread}}"
            )
        )
    else:
        key = ThreadKey(user_id, match.group(2))
    checkpoint(v, value, prefix)
    writes(v, value.pending_writes, f"{prefix}.pending_writes")
    seen: set[tuple[str, int]] = set()
    for index, write in enumerate(value.pending_writes):
        if (write.task_id, write.idx) in seen:
            v.invalid(
                f"{prefix}.pending_writes[{index}].idx",
                "repeats an earlier write's task_id and idx",
            )
        seen.add((write.task_id, write.idx))
    return checkpoint_from_proto(key, value, with_writes=True)
