"""Where a write reports the cursor of the last change it appended.

One mechanism serves every RPC's ``change_cursor``: a server interceptor
(``api.change_sink``) opens a ``ChangeSink`` for the call (``collecting``);
the store's change append (``sql_changes.append``) sets its cursor, and a
replayed idempotent request restores the cursor recorded with its result
(``store.idempotency``); ``Database.write`` puts back the cursor from before
each attempt it retries (``attempt``), so a rolled-back attempt leaves no
trace. The interceptor then writes the cursor into the response.

The sink is a mutable object held by a context variable: it crosses into the
thread runner's worker (which runs in a copy of the caller's context; the
copy refers to the same object) and into ``run_sync``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["ChangeSink", "attempt", "collecting", "current_cursor", "report"]


@dataclass
class ChangeSink:
    """The cursor of the last change the call appended (0: none yet)."""

    cursor: int = 0


_sink: contextvars.ContextVar[ChangeSink | None] = contextvars.ContextVar(
    "mnemo_change_sink", default=None
)


@contextmanager
def collecting() -> Iterator[ChangeSink]:
    """A fresh sink for the code run inside (one RPC call)."""
    sink = ChangeSink()
    token = _sink.set(sink)
    try:
        yield sink
    finally:
        _sink.reset(token)


def report(cursor: int) -> None:
    """Record ``cursor`` as the call's newest (outside a call: nothing)."""
    sink = _sink.get()
    if sink is not None:
        sink.cursor = cursor


def current_cursor() -> int:
    """The cursor reported so far in this call (0: none or outside a call)."""
    sink = _sink.get()
    return 0 if sink is None else sink.cursor


@contextmanager
def attempt() -> Iterator[None]:
    """One attempt of a write transaction: if it fails, the cursor it may
    have reported is taken back."""
    sink = _sink.get()
    before = 0 if sink is None else sink.cursor
    try:
        yield
    except BaseException:
        if sink is not None:
            sink.cursor = before
        raise
