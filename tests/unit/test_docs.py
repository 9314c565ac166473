"""The documentation stays true to the code: settings, error reasons, and
the names of code and files that docstrings, comments and docs mention."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from google.protobuf.message import Message

import mnemo.v1
import mnemo_server
from mnemo.v1 import error_reason_pb2
from mnemo_server.config import OPTIONS, Option
from mnemo_server.store import schema

ROOT = Path(__file__).resolve().parents[2]


def _table_rows(path: Path) -> list[list[str]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.field)
def test_readme_configuration_table_lists_every_setting(option: Option) -> None:
    rows = _table_rows(ROOT / "README.md")
    matching = [row for row in rows if row[:2] == [f"`{option.flag}`", f"`{option.env}`"]]
    assert matching, f"README configuration table has no row for {option.flag} / {option.env}"


def test_readme_configuration_table_lists_nothing_else() -> None:
    flags = {f"`{option.flag}`" for option in OPTIONS}
    documented = {
        row[0] for row in _table_rows(ROOT / "README.md") if re.fullmatch(r"`--[a-z0-9-]+`", row[0])
    }
    assert documented == flags


def test_error_guide_lists_every_reason() -> None:
    documented = {row[0].strip("`") for row in _table_rows(ROOT / "docs" / "api" / "errors.md")}
    reasons = {
        name.removeprefix("ERROR_REASON_")
        for name in error_reason_pb2.ErrorReason.keys()
        if name != "ERROR_REASON_UNSPECIFIED"
    }
    assert reasons <= documented, f"missing from docs/api/errors.md: {sorted(reasons - documented)}"


# --- names the docstrings, comments and docs refer to ---------------------------------------------

# ``a.b`` or ``a.b()``, not a file name (``access.log``).
_DOUBLE_TICKED = re.compile(r"``([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?<!\.log)(?:\(\))?``")
_TICKED = re.compile(r"`([^`\s]+)`")
_PACKAGES = ("api", "auth", "cli", "domain", "rpc", "store", "web")


@functools.cache
def _server_modules() -> list[ModuleType]:
    names = [
        info.name
        for info in pkgutil.walk_packages(mnemo_server.__path__, "mnemo_server.")
        if ".migrations.versions" not in info.name
    ]
    return [importlib.import_module(name) for name in names]


@functools.cache
def _classes() -> dict[str, list[Any]]:
    """Every class of ``mnemo_server`` and every generated message and enum, by name."""
    found: dict[str, list[Any]] = {}
    for module in _server_modules():
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                found.setdefault(name, []).append(value)
    for info in pkgutil.iter_modules(mnemo.v1.__path__, "mnemo.v1."):
        for name, value in vars(importlib.import_module(info.name)).items():
            if (inspect.isclass(value) and issubclass(value, Message)) or isinstance(
                value, EnumTypeWrapper
            ):
                found.setdefault(name, []).append(value)
    return found


def _has(owner: Any, name: str) -> bool:
    if hasattr(owner, name):
        return True
    if inspect.ismodule(owner):
        is_package = hasattr(owner, "__path__")
        return is_package and importlib.util.find_spec(f"{owner.__name__}.{name}") is not None
    if inspect.isclass(owner) and issubclass(owner, Message):
        return name in owner.DESCRIPTOR.fields_by_name
    if inspect.isclass(owner):  # a dataclass field or an attribute set in a method
        for klass in owner.__mro__:
            if name in getattr(klass, "__annotations__", {}) or name in getattr(
                klass, "__slots__", ()
            ):
                return True
            with contextlib.suppress(TypeError, OSError):
                if re.search(rf"\bself\.{name}\b", inspect.getsource(klass)):
                    return True
    return False


def _resolves(owner: Any, path: list[str]) -> bool:
    for name in path:
        if not _has(owner, name):
            return False
        if inspect.ismodule(owner) and not hasattr(owner, name):
            owner = importlib.import_module(f"{owner.__name__}.{name}")
        else:
            owner = getattr(owner, name, None)
        if owner is None or not (inspect.ismodule(owner) or inspect.isclass(owner)):
            return True  # an attribute of an instance: as far as one can tell
    return True


def _unresolved(name: str, namespace: dict[str, Any]) -> bool:
    """Whether ``name`` should name code and names none. Checked: names from
    the package (``store.engine.failures``, ``mnemo_server.config``,
    ``mnemo.v1.Memory``), from a class (``SqlStore.execute``), a table's
    column (``memories.id``), and from a module imported where it is
    mentioned, one beside it or the only one of that name; anything else (a
    request field path such as ``memory.embedding.values``, a module name
    that no longer exists at all) is passed over."""
    first, *rest = name.split(".")
    if first == "mnemo_server" or first in _PACKAGES:
        path = rest if first == "mnemo_server" else [first, *rest]
        return not _resolves(mnemo_server, path)
    if first == "mnemo" and rest[:1] == ["v1"] and len(rest) > 1:
        owners = _classes().get(rest[1])
        if owners is None:
            return not _resolves(mnemo.v1, rest[1:])
        return not any(_resolves(owner, rest[2:]) for owner in owners)
    imported = namespace.get(first)
    if inspect.ismodule(imported) and imported.__name__.startswith(("mnemo", "tests")):
        return not _resolves(imported, rest)
    if first in _classes():
        return not any(_resolves(owner, rest) for owner in _classes()[first])
    table = schema.metadata.tables.get(first)
    if table is not None and len(rest) == 1:  # a column
        return rest[0] not in table.c
    module = _module_named(first, namespace.get("__name__", ""))
    return module is not None and not _resolves(module, rest)


def _module_named(name: str, mentioned_in: str) -> ModuleType | None:
    """The module ``name`` stands for where ``mentioned_in`` mentions it: a
    module of its package or of a package above, else the only module of the
    server of that name."""
    package = mentioned_in
    while "." in package:
        package = package.rpartition(".")[0]
        if importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
    found = [m for m in _server_modules() if m.__name__.rpartition(".")[2] == name]
    return found[0] if len(found) == 1 else None


def test_docstrings_and_comments_name_code_that_exists() -> None:
    support = [
        importlib.import_module(f"tests.support.{path.stem}")
        for path in sorted((ROOT / "tests" / "support").glob("*.py"))
    ]
    stale = []
    for module in _server_modules() + support:
        assert module.__file__ is not None
        for number, line in enumerate(Path(module.__file__).read_text().splitlines(), 1):
            for name in _DOUBLE_TICKED.findall(line):
                if _unresolved(name, vars(module)):
                    stale.append(f"{module.__name__}:{number}: ``{name}``")
    assert not stale, "names of code that does not exist (renamed or removed?):\n" + "\n".join(
        stale
    )


def test_docs_name_code_and_files_that_exist() -> None:
    stale = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for ticked in _TICKED.findall(line):
                name = ticked.removesuffix("()")
                where = f"{path.relative_to(ROOT)}:{number}: `{ticked}`"
                if re.fullmatch(r"(server|tests|docs|clients|bench|tools|protos)/[\w./-]+", name):
                    # Placeholders (soak-STORE-TIME.json) are not files.
                    if not re.search(r"[A-Z]{3,}", name) and not (ROOT / name).exists():
                        stale.append(where)
                elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", name):
                    if name.split(".")[0] in ("mnemo_server", *_PACKAGES) and _unresolved(name, {}):
                        stale.append(where)
    assert not stale, "names of code or files that do not exist:\n" + "\n".join(stale)
