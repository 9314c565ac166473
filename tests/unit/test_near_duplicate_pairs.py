"""The near-duplicate set's shape (bench/data/near_duplicate_pairs.jsonl,
measured by bench/near_duplicates.py): every line a labelled pair of two
different texts, enough of them, both labels well represented, no pair twice.
No embedding here: the figures live in docs/relevance.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "near_duplicate_pairs.jsonl"
KEYS = {"a", "b", "same", "kind"}


@pytest.fixture(scope="module")
def pairs() -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(DATA.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            pytest.fail(f"line {number} is not JSON: {error}")
        assert isinstance(row, dict), f"line {number} is not an object"
        rows.append(row)
    return rows


def test_every_line_is_a_labelled_pair(pairs: list[dict[str, Any]]) -> None:
    for number, row in enumerate(pairs, start=1):
        assert set(row) == KEYS, f"line {number} has keys {sorted(row)}, not {sorted(KEYS)}"
        assert isinstance(row["same"], bool), f"line {number}: same must be true or false"
        for key in ("a", "b", "kind"):
            assert isinstance(row[key], str) and row[key].strip(), f"line {number}: empty {key}"
        assert row["a"].strip().casefold() != row["b"].strip().casefold(), (
            f"line {number}: a and b are the same text"
        )


def test_the_set_is_large_and_balanced(pairs: list[dict[str, Any]]) -> None:
    assert len(pairs) >= 300
    same = sum(row["same"] for row in pairs)
    assert 0.4 <= same / len(pairs) <= 0.6, f"{same} of {len(pairs)} pairs are same-fact"


def test_no_pair_twice(pairs: list[dict[str, Any]]) -> None:
    seen: dict[frozenset[str], int] = {}
    for number, row in enumerate(pairs, start=1):
        key = frozenset((row["a"].strip().casefold(), row["b"].strip().casefold()))
        assert key not in seen, f"line {number} repeats line {seen[key]} (in either order)"
        seen[key] = number


def test_a_kind_holds_one_label(pairs: list[dict[str, Any]]) -> None:
    labels: dict[str, set[bool]] = {}
    for row in pairs:
        labels.setdefault(row["kind"], set()).add(row["same"])
    mixed = sorted(kind for kind, seen in labels.items() if len(seen) > 1)
    assert not mixed, f"kinds with both labels: {mixed} (the per-kind figures assume one)"
