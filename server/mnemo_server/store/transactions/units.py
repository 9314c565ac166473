"""The unit of work of each command type, and how a command is run.

A store module registers the function that carries out a command::

    @unit(RememberExchange)
    def remember(tx: Tx, command: RememberExchange) -> RememberResult: ...

``run`` turns a command into the function of a ``Tx`` that ``Database.write``
runs: its unit, wrapped in the idempotency record when the command carries
a request id (``store.transactions.idempotency``). Every command type of
``domain.commands`` has exactly one unit (a test checks it); adding a write
means a command, its unit, and a servicer method that builds the command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mnemo_server.domain.commands import Command, Idempotent
from mnemo_server.store.transactions.idempotency import idempotent
from mnemo_server.store.transactions.tx import Tx

__all__ = ["Unit", "registered", "run", "unit"]

C = TypeVar("C", bound=Command[Any])
R = TypeVar("R")

Unit = Callable[[Tx, Any], Any]

_UNITS: dict[type[Command[Any]], Unit] = {}


def unit(command_type: type[C]) -> Callable[[Callable[[Tx, C], R]], Callable[[Tx, C], R]]:
    """Register the decorated function as the unit of ``command_type``."""

    def register(fn: Callable[[Tx, C], R]) -> Callable[[Tx, C], R]:
        if command_type in _UNITS:
            raise TypeError(f"{command_type.__name__} has a unit already")
        _UNITS[command_type] = fn
        return fn

    return register


def registered() -> dict[type[Command[Any]], Unit]:
    """Every command type with its unit (a copy)."""
    return dict(_UNITS)


def run(command: Command[R], *, window_micros: int) -> Callable[[Tx], R]:
    """The unit of work that carries ``command`` out: its unit, idempotent
    when it carries a request id (``window_micros``: how long a recorded
    result answers retries). Raises ``KeyError`` for a command without one."""
    work: Callable[[Tx, Command[R]], R] = _UNITS[type(command)]
    if isinstance(command, Idempotent) and command.idempotency is not None:
        return lambda tx: idempotent(tx, command, work, window_micros=window_micros)
    return lambda tx: work(tx, command)
