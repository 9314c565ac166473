"""Who one call acted for, for its access log line (``observability``).

The access log is written by the outermost interceptor, after the call, but
the caller is known only to the auth interceptor inside it (``auth``), and
only while the handler runs. So the outer one opens a ``CallNote`` for the
call (``noting``) and the auth interceptor notes the verified user in it
(``note_user``); without an access log nobody opens one and ``note_user``
does nothing. It carries a user id for the log, never data a handler reads.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["CallNote", "note_user", "noting"]


@dataclass(slots=True)
class CallNote:
    """The user a call acted for (empty: not known)."""

    user_id: str = ""


_NOTE: ContextVar[CallNote | None] = ContextVar("mnemo_call_note", default=None)


class noting:
    """A note for the call the ``with`` block runs (a class, not a
    generator: it runs on every call of a server with an access log)."""

    __slots__ = ("_note", "_token")

    def __enter__(self) -> CallNote:
        self._note = CallNote()
        self._token = _NOTE.set(self._note)
        return self._note

    def __exit__(self, *_exc: object) -> None:
        # From another context (a response stream finalized elsewhere) there
        # is nothing to restore: that context was the call's own.
        try:
            _NOTE.reset(self._token)
        except ValueError:
            pass


def note_user(user_id: str) -> None:
    """Note the verified user of the current call (if a note is open)."""
    note = _NOTE.get()
    if note is not None:
        note.user_id = user_id
