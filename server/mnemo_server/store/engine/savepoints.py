"""The savepoint around each write of a batch that shares one transaction
(``lanes.WriteLane``)."""

from __future__ import annotations

from typing import Any, Literal

_NAME = "mnemo_op"


class Savepoint:
    """The savepoint around each write of a shared batch, with as few round
    trips as its states allow: a write's savepoint is released by the next
    write's ``enter`` (on PostgreSQL in the same round trip, ``joined``) or by
    the commit; one rolled back to stays established for the next write."""

    def __init__(self, raw: Any, *, joined: bool) -> None:
        self._raw = raw
        self._joined = joined
        self._state: Literal["none", "clean", "kept"] = "none"

    def enter(self) -> None:
        """Before a write: a savepoint with nothing done in it yet."""
        if self._state == "none":
            self._raw.execute(f"SAVEPOINT {_NAME}")
        elif self._state == "kept":
            if self._joined:  # two statements, no parameters: one simple query
                self._raw.execute(f"RELEASE SAVEPOINT {_NAME}; SAVEPOINT {_NAME}")
            else:
                self._raw.execute(f"RELEASE SAVEPOINT {_NAME}")
                self._raw.execute(f"SAVEPOINT {_NAME}")
        self._state = "clean"

    def kept(self) -> None:
        """The write succeeded: what it did stays (released later)."""
        self._state = "kept"

    def roll_back(self) -> None:
        """The write failed: undo what it did (the savepoint stays)."""
        self._raw.execute(f"ROLLBACK TO SAVEPOINT {_NAME}")
        self._state = "clean"
