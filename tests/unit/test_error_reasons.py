"""Error reasons are the generated ``ErrorReason`` enum's, named at every raise."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import grpc

from mnemo_server.domain import errors
from mnemo_server.domain.governance import Gate
from mnemo_server.rpc.errors import REASONS, to_status

SERVER = Path(__file__).resolve().parents[2] / "server" / "mnemo_server"
ERROR_CLASSES = {
    name
    for name, value in vars(errors).items()
    if isinstance(value, type) and issubclass(value, errors.MnemoError)
}


def _reasons_in_source() -> dict[str, list[str]]:
    """Every reason a call of an error class (or a ``reason=`` keyword) names
    as a literal in the server's source, with where."""
    found: dict[str, list[str]] = {}
    for path in SERVER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            values = [k.value for k in node.keywords if k.arg == "reason"]
            callee = node.func
            name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")
            if name in ERROR_CLASSES and len(node.args) >= 2:
                values.append(node.args[1])
            for value in values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    where = f"{path.relative_to(SERVER)}:{node.lineno}"
                    found.setdefault(value.value, []).append(where)
    return found


def test_every_reason_the_server_names_is_an_error_reason_value() -> None:
    found = _reasons_in_source()
    assert len(found) >= 20  # the scan sees the raises
    unknown = {reason: where for reason, where in found.items() if reason not in REASONS}
    assert unknown == {}
    assert {gate.value for gate in Gate} <= REASONS


def test_no_error_class_has_a_default_reason() -> None:
    for name in ERROR_CLASSES:
        cls = getattr(errors, name)
        (reason,) = [f for f in dataclasses.fields(cls) if f.name == "reason"]
        assert reason.default is dataclasses.MISSING, name
        assert reason.default_factory is dataclasses.MISSING, name


def test_a_reason_outside_the_enum_is_answered_as_internal() -> None:
    status = to_status(errors.NotFound("gone", reason="NOT_A_REASON"))
    assert status.code is grpc.StatusCode.INTERNAL
    assert "gone" not in status.details
    assert to_status(errors.NotFound("gone", reason="NOT_FOUND")).code is grpc.StatusCode.NOT_FOUND
