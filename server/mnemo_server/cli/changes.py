"""``mnemo changes tail --user USER``: print a user's change feed as it
happens, through a running server (``SyncService.WatchChanges``, followed by
the Python client's ``ChangeFollower``: a server restart or a dropped
connection is resumed after the last change printed, with no gap and no
duplicate).

One line per change on stdout, flushed at once::

    42 2026-12-01T21:50:00.123456Z upsert users/u1/memories/m1 memory "Lives in Oslo"

the cursor, the commit time, the operation (``upsert``, ``delete``,
``erase``), the resource name, what it is and a short excerpt of its state.
It starts after ``--after CURSOR`` (0: every change still retained); by
default after the user's latest change, printing only new ones. When the
backlog is printed, one line on stderr says so (``caught up at cursor N``).
It runs until Ctrl-C (SIGINT) or SIGTERM, then exits 0 with the last cursor
printed on stderr (pass it as ``--after`` to go on from there), or after
``--count N`` changes. Changes no longer retained after the cursor
(``CURSOR_EXPIRED``) or a cursor of another database (``CURSOR_AHEAD``) are
said on stderr, and the tail goes on from the user's latest change.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from mnemo.client import ChangeFollower, MnemoClient, MnemoError, OutOfRangeError
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import sync_pb2 as sy
from mnemo_server.cli.connection import (
    EXIT_OK,
    action_parser,
    connection_arguments,
    run_with_client,
)

COMMAND = "changes"
WATCH_TIMEOUT_S = 300.0
EXCERPT_CHARS = 60
_OPERATIONS = {
    sy.CHANGE_OPERATION_UPSERT: "upsert",
    sy.CHANGE_OPERATION_DELETE: "delete",
    sy.CHANGE_OPERATION_ERASE: "erase",
}


def add_command(commands: Any) -> None:
    """Add ``changes tail`` to the ``mnemo`` subcommands."""
    tail = action_parser(
        commands,
        COMMAND,
        "a user's change feed",
        "tail",
        help="print a user's changes as they happen, one line each, until Ctrl-C",
        description="Print the user's changes as they commit, one line each (cursor, time, "
        "operation, resource name, kind, excerpt), resuming by itself across reconnects, "
        "until Ctrl-C or --count changes.",
    )
    tail.add_argument("--user", required=True, help="the user id")
    tail.add_argument(
        "--after",
        type=_cursor,
        default=None,
        metavar="CURSOR",
        help="start after this cursor (0: every change retained); default: after the "
        "latest, printing only new changes",
    )
    tail.add_argument(
        "--count", type=_cursor, default=0, metavar="N", help="stop after N changes (0: never)"
    )
    connection_arguments(tail, 30.0, "deadline of each call but the watch itself")


def _cursor(value: str) -> int:
    number = int(value)
    if number < 0:
        raise ValueError("must be 0 or more")
    return number


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run ``mnemo changes tail``; the exit code."""
    return run_with_client(args, env, _tail)


class _Stop(Exception):
    """Ctrl-C (SIGINT) or SIGTERM."""


class _Signals:
    """SIGINT and SIGTERM raise ``_Stop`` once; later ones, and those that
    come inside ``held()`` (raised on leaving it) or after ``ignore()``, are
    only noted: a change is printed and counted, or neither, and the closing
    report is always written."""

    def __init__(self) -> None:
        self._holding = False
        self._pending = False

    def __enter__(self) -> _Signals:
        self._previous = {s: signal.signal(s, self._handle) for s in _STOP_SIGNALS}
        return self

    def __exit__(self, *_exc: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, _signal: int, _frame: FrameType | None) -> None:
        if self._holding:
            self._pending = True
            return
        self._holding = True
        raise _Stop

    def ignore(self) -> None:
        """Raise nothing more (the loop is over)."""
        self._holding = True

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        if self._pending:
            self._holding = True
            raise _Stop


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class _Printed:
    """How far the tail got: the changes printed and the cursor of the last
    one (``None`` before it started following)."""

    count: int = 0
    cursor: int | None = None


def _tail(client: MnemoClient, args: argparse.Namespace) -> int:
    printed = _Printed()
    with _Signals() as signals:
        try:
            _follow(client, args, printed, signals)
            signals.ignore()
        except _Stop:
            pass
    if printed.cursor is not None:
        print(
            f"mnemo: stopped after cursor {printed.cursor} ({printed.count} changes printed); "
            f"go on with --after {printed.cursor}",
            file=sys.stderr,
        )
    return EXIT_OK


def _follow(
    client: MnemoClient, args: argparse.Namespace, printed: _Printed, signals: _Signals
) -> None:
    """Print the changes after ``--after`` (or the latest) until stopped,
    keeping ``printed`` up to date. Raises ``_Stop``."""
    # Also with --after: a server that cannot be reached (or refuses the
    # caller) fails here, naming its address, instead of being retried.
    latest = client.list_changes(args.user, page_size=1, timeout=args.timeout).latest_cursor
    after = latest if args.after is None else args.after
    outage = _Outage(args.target)
    follower = ChangeFollower(
        client,
        args.user,
        after_cursor=after,
        on_resync=_resynced,
        on_error=outage.began,
        watch_timeout=WATCH_TIMEOUT_S,
    )
    printed.cursor = after
    print(
        f"mnemo: following users/{args.user} after cursor {after} (Ctrl-C to stop)",
        file=sys.stderr,
        flush=True,
    )
    caught_up = False
    for event in follower:
        outage.ended()
        if isinstance(event, sy.Heartbeat):
            if not caught_up:
                print(f"mnemo: caught up at cursor {event.cursor}", file=sys.stderr, flush=True)
                caught_up = True
            continue
        with signals.held():
            print(change_line(event), flush=True)
            printed.count, printed.cursor = printed.count + 1, event.cursor
        if printed.count == args.count:
            return


def _resynced(error: OutOfRangeError) -> None:
    print(
        f"mnemo: {error.reason}: changes after the cursor are not in this feed; "
        "going on from the user's latest change",
        file=sys.stderr,
        flush=True,
    )


class _Outage:
    """Says once that the watch of ``target`` broke (why, and that it is
    being resumed), and once that it is back: not a line per retry."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._down = False

    def began(self, error: MnemoError) -> None:
        if self._down:
            return
        self._down = True
        print(
            f"mnemo: the watch of {self._target} ended ({error}); resuming after the last "
            "change printed, retrying until the server is back (Ctrl-C to stop)",
            file=sys.stderr,
            flush=True,
        )

    def ended(self) -> None:
        if self._down:
            self._down = False
            print(f"mnemo: resumed the watch of {self._target}", file=sys.stderr, flush=True)


def change_line(change: sy.Change) -> str:
    """One change, readable (see the module doc)."""
    operation = _OPERATIONS.get(change.operation, str(change.operation))
    parts = [str(change.cursor), change.change_time.ToJsonString(), operation]
    parts.append(change.resource_name)
    kind = change.WhichOneof("state")
    if kind is not None:
        parts.append(kind)
        excerpt = _excerpt(change, kind)
        if excerpt:
            parts.append(json.dumps(_cut(excerpt), ensure_ascii=False))
    return " ".join(parts)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _excerpt(change: sy.Change, kind: str) -> str:
    """A short text of the state: what a person would look for first."""
    if kind == "memory":
        return change.memory.text
    if kind == "message":
        return f"{change.message.role}: {change.message.text}"
    if kind == "memory_state":
        return change.memory_state.summary
    if kind == "candidate":
        return change.candidate.memory.text
    if kind == "tombstone":
        return change.tombstone.key
    if kind == "consent":
        state = gv.ConsentState.Name(change.consent.state)
        return state.removeprefix("CONSENT_STATE_").lower()
    if kind == "memory_settings":
        return "memory on" if change.memory_settings.enabled else "memory off"
    if kind == "failed_run":
        return change.failed_run.error.message
    if kind == "document":
        return change.document.key
    if kind == "checkpoint":
        return change.checkpoint.checkpoint_id
    return ""
