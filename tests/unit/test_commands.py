"""Every write command has exactly one unit of work, and names its result type."""

from __future__ import annotations

import importlib
import pkgutil

import mnemo_server.domain.commands as commands_package
from mnemo_server.domain.commands import Command, Idempotent, result_type
from mnemo_server.store import composed as _registers_units  # noqa: F401
from mnemo_server.store.transactions.units import registered
from mnemo_server.store.user_data import store as _registers_user_data  # noqa: F401


def _command_types() -> set[type[Command[object]]]:
    for module in pkgutil.iter_modules(commands_package.__path__):
        importlib.import_module(f"{commands_package.__name__}.{module.name}")
    found: set[type[Command[object]]] = set()
    pending: list[type[Command[object]]] = [Command]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if not sub.__name__.startswith("_") and sub is not Idempotent:
                found.add(sub)
    return found


def test_every_command_has_a_unit_of_work() -> None:
    commands = _command_types()
    assert len(commands) >= 20  # the writes of the API (ExtractMemories is a use case's)
    units = registered()
    missing = {c.__name__ for c in commands} - {c.__name__ for c in units}
    # ExtractMemories becomes CreateMemories or ProposeCandidates in its use case.
    assert missing == {"ExtractMemories"}
    assert set(units) <= commands


def test_every_command_names_its_result_type() -> None:
    for command in _command_types():
        result_type(command)  # raises TypeError if a command does not say
