"""The documentation stays true to the code: settings and error reasons."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mnemo.v1 import error_reason_pb2
from mnemo_server.config import OPTIONS, Option

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
