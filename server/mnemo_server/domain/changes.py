"""The per-user change feed (SyncService): what a change record is.

Every mutation appends one or more ``Change`` records for its user in the
same transaction as the mutation. A user's cursors only grow: each change
gets the next cursor of its user (1, 2, 3, ...), allocated under the user's
row lock, so cursors commit in order and a reader that has seen cursor ``n``
never later finds an uncommitted ``m < n`` appearing (no gap).

The state is the resource as the mutation left it, as a domain object:
``MemoryState``, ``Conversation``, ``StoredMessage``, ``Memory``,
``MemoryTombstone``, ``MemorySettings``, ``Consent``, ``MemoryCandidate`` or
``FailedRun``; ``None`` for an erasure, and for earlier changes of a memory
whose text a private delete removed (the delete's own change carries the
tombstone).

What each write appends (``store.feed.changes``; UPSERT unless said):

- working memory save / remember / clear: the ``MemoryState`` (preceded by the
  ``Conversation`` when the write created a named conversation implicitly);
  a clear also strips the state of the earlier changes of that state;
- conversation create / update: the ``Conversation``; delete: DELETE of it
  (no state), and its earlier changes (messages, working memory, failed runs)
  lose their state; so does the purge of an expired temporary conversation;
- append: the ``Conversation`` (new count and etag), then one
  ``StoredMessage`` per message; clear messages and compaction
  (ReplaceHistoryPrefix): the ``Conversation`` (a clear shows
  ``message_count`` 0: drop the conversation's messages; the messages'
  earlier changes lose their state); pop: the ``Conversation``, then a
  DELETE of each removed message (whose earlier changes lose their state);
  a failed run: the
  ``FailedRun`` (after the ``Conversation`` if it created one);
- memory create (and candidate approval): per entry, each entry its key
  archived (a ``Memory`` with ``archive_time``), then the new ``Memory``;
  update: the ``Memory``; delete: DELETE with the ``MemoryTombstone`` (the
  entry's earlier changes, and those of the candidate approved into it, lose
  their state); deleting a deleted entry appends nothing;
- candidates propose / approve / reject: the ``MemoryCandidate`` (approve:
  after the entries); a repeated approve or reject appends nothing;
- settings: ``MemorySettings``; consent: ``Consent`` (then every pending
  candidate a withdrawal cancelled); setting the stored consent again appends
  nothing;
- import: one change per imported resource; erasure: every change of the
  user is deleted and one ERASE change (resource ``users/{user}``, no state)
  appended.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from mnemo_server.domain.governance import Consent, MemorySettings
from mnemo_server.domain.memory_models import Memory, MemoryCandidate, MemoryTombstone
from mnemo_server.domain.models import Conversation, FailedRun, MemoryState, StoredMessage

ChangeState = (
    MemoryState
    | Conversation
    | StoredMessage
    | Memory
    | MemoryTombstone
    | MemorySettings
    | Consent
    | MemoryCandidate
    | FailedRun
)


class ChangeOperation(enum.Enum):
    """What a change did (``mnemo.v1.ChangeOperation``)."""

    UPSERT = "upsert"
    DELETE = "delete"
    ERASE = "erase"


@dataclass(frozen=True)
class NewChange:
    """A change to append; the store assigns the cursor and the time."""

    operation: ChangeOperation
    resource_name: str
    etag: str = ""
    state: ChangeState | None = None


@dataclass(frozen=True)
class Change:
    """A recorded change."""

    user_id: str
    cursor: int
    operation: ChangeOperation
    resource_name: str
    etag: str
    change_time: datetime
    state: ChangeState | None


@dataclass(frozen=True)
class ChangePage:
    """Changes after a cursor, oldest first, with the feed's bounds when read.

    ``latest_cursor`` is the user's newest cursor (0: no change ever);
    ``oldest_cursor`` the oldest one still retained (``latest_cursor + 1``
    when none is retained).
    """

    changes: tuple[Change, ...]
    latest_cursor: int
    oldest_cursor: int
