"""Compaction of a conversation history, without ever deleting a canonical message.

A checkpoint says: "the first ``covered`` canonical messages are represented
by ``replacement``". The projection a client sees is the latest checkpoint's
replacement followed by the canonical messages from position ``covered`` on.
A revision names (generation, checkpoint sequence): a clear starts a new
generation, a compaction a new sequence; appends change neither, so a
compaction computed while messages were being appended still commits.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo_server.domain.errors import Entry, InvalidArgument, Part
from mnemo_server.domain.models import NewMessage


@dataclass(frozen=True)
class Checkpoint:
    """The replacement messages and how many canonical messages they cover."""

    replacement: tuple[NewMessage, ...] = ()
    covered: int = 0


def encode_revision(generation: int, sequence: int) -> str:
    """An opaque revision string."""
    raw = f"r1:{generation}:{sequence}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def foreign_revision() -> InvalidArgument:
    """A revision this server did not issue (``Entry(Part.REVISION)``)."""
    return InvalidArgument(
        "the revision is not one returned by SnapshotHistory; take a new snapshot",
        reason="INVALID_FIELD",
        entry=Entry(Part.REVISION),
    )


def revision_parts(revision: str) -> tuple[int, int] | None:
    """``(generation, sequence)``, or ``None`` for a revision we did not issue
    (the API layer reports it under the request's field)."""
    try:
        padded = revision + "=" * (-len(revision) % 4)
        tag, generation, sequence = base64.urlsafe_b64decode(padded).decode().split(":")
        if tag != "r1":
            raise ValueError(tag)
        return int(generation), int(sequence)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


def projection_size(checkpoint: Checkpoint, canonical_count: int) -> int:
    """How many messages the projection has."""
    return len(checkpoint.replacement) + max(0, canonical_count - checkpoint.covered)


def next_checkpoint(
    previous: Checkpoint,
    canonical_count: int,
    message_count: int,
    replacement: Sequence[NewMessage],
) -> Checkpoint:
    """The checkpoint that replaces the first ``message_count`` projection messages.

    Raises ``InvalidArgument`` (``Entry(Part.MESSAGE_COUNT)``, metadata
    ``limit``: the projection size) when ``message_count`` is not in
    1..projection size.
    """
    size = projection_size(previous, canonical_count)
    if not 1 <= message_count <= size:
        raise InvalidArgument(
            f"the message count must be between 1 and the projection size {size}",
            reason="INVALID_FIELD",
            metadata={"limit": str(size)},
            entry=Entry(Part.MESSAGE_COUNT),
        )
    kept_replacement = len(previous.replacement)
    if message_count <= kept_replacement:
        return Checkpoint(
            replacement=(*replacement, *previous.replacement[message_count:]),
            covered=previous.covered,
        )
    return Checkpoint(
        replacement=tuple(replacement),
        covered=previous.covered + (message_count - kept_replacement),
    )
