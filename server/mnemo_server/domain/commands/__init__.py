"""Writes as values: one frozen command per write operation.

A servicer builds the command once from the validated request (with the
verified caller, explicitly), the use case passes it on (adding only what
the server computes, such as a vector, with ``dataclasses.replace``), and
the store runs the one unit of work registered for its type
(``store.transactions.units``). The store answers with a ``Written``: the result and the
cursor of the last change the write appended to the user's change feed,
which the servicer puts into the response's ``change_cursor``.

``Command[R]`` names its result type ``R``; ``result_type`` recovers it (the
idempotency record of a write is decoded as that type on a retry).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mnemo_server.domain.identity import Caller
from mnemo_server.domain.models import Idempotency

__all__ = ["Command", "Idempotent", "Written", "result_type"]

R = TypeVar("R")

DEFAULT_WEIGHT = 256
"""The size hint, in bytes, of a command that carries no large payload."""


@dataclass(frozen=True, kw_only=True)
class Command(Generic[R]):
    """A write of ``user_id``'s data by ``caller`` (``None`` under ``--auth none``).

    ``weight`` is a size hint in bytes, which bounds how many writes share a
    transaction (``store.engine.lanes.BatchLimits``); ``alone`` asks for a
    transaction of its own (a write that touches a whole user).
    """

    caller: Caller | None
    user_id: str

    @property
    def weight(self) -> int:
        return DEFAULT_WEIGHT

    @property
    def alone(self) -> bool:
        return False


@dataclass(frozen=True, kw_only=True)
class Idempotent(Command[R]):
    """A write that a ``request_id`` makes idempotent: a retry with the same
    ``idempotency`` key returns the first result and writes nothing."""

    idempotency: Idempotency | None = None

    def recorded(self, result: R) -> R:
        """What a retry is answered with (the idempotency record keeps it):
        all of ``result`` unless a command knows its callers need less."""
        return result


@dataclass(frozen=True, slots=True)
class Written(Generic[R]):
    """What a write produced: its result and the cursor of the last change it
    appended to the user's feed (0: it changed nothing)."""

    value: R
    change_cursor: int = 0


_RESULT_TYPES: dict[type, Any] = {}


def result_type(command_type: type[Command[Any]]) -> Any:
    """The ``R`` of ``command_type``'s ``Command[R]`` base (for decoding)."""
    found = _RESULT_TYPES.get(command_type)
    if found is not None:
        return found
    for cls in command_type.__mro__:
        for base in getattr(cls, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            if isinstance(origin, type) and issubclass(origin, Command):
                (argument,) = typing.get_args(base)
                if not isinstance(argument, TypeVar):
                    _RESULT_TYPES[command_type] = argument
                    return argument
    raise TypeError(f"{command_type.__name__} does not name its result type")
