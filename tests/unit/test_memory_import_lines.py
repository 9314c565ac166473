"""``mnemo import --memories`` reads a line as ``json_format`` would: its
fast path for plain vectors gives the same message, and anything else falls
back to ``json_format`` (its message or its error)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format

from mnemo.v1 import memories_pb2 as mm
from mnemo_server.cli.memory_import import LineProblem, entry_of

LINES: list[dict[str, Any]] = [
    {"text": "a", "embedding": {"model": "m", "values": [1, 2.5, -3, 0.1]}},
    {"text": "a", "scope": "MEMORY_SCOPE_CONVERSATION", "embedding": {"values": [0.5]}},
    {"text": "a", "embedding": {"model": "m"}},
    {"text": "a", "embedding": {}},
    {"text": "a", "embedding": {"values": ["NaN", "Infinity", 1]}},
    {"text": "a", "metadata": {"k": "v"}, "pinned": True},
    {"text": "a", "embedding": {"values": [True, 2]}},  # json_format takes a bool as 1.0
]
REFUSED: list[dict[str, Any]] = [
    {"text": "a", "embedding": {"values": [1e39]}},  # beyond float
    {"text": "a", "embedding": {"values": [1], "extra": 1}},
    {"text": "a", "embedding": {"model": 5, "values": [1]}},
    {"text": "a", "embedding": [1, 2]},
    {"text": "a", "unknown": 1},
]


@pytest.mark.parametrize("data", LINES)
def test_a_line_reads_as_json_format_reads_it(data: dict[str, Any]) -> None:
    line = json.dumps(data)
    expected = json_format.ParseDict(json.loads(line), mm.Memory())
    assert entry_of(line, "f:1", "u1") == mm.CreateMemoryRequest(memory=expected)


@pytest.mark.parametrize("data", REFUSED)
def test_what_json_format_refuses_is_refused_with_its_line(data: dict[str, Any]) -> None:
    line = json.dumps(data)
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict(json.loads(line), mm.Memory())
    with pytest.raises(LineProblem, match=r"^f:7: not a mnemo.v1.Memory \("):
        entry_of(line, "f:7", "u1")


def test_a_name_of_the_user_chooses_the_id() -> None:
    request = entry_of('{"text": "a", "name": "users/u1/memories/m-1"}', "f:1", "u1")
    assert (request.memory_id, request.memory.name) == ("m-1", "")
    for name in ("users/u2/memories/m-1", "users/u1/memories/m/1", "m-1"):
        with pytest.raises(LineProblem, match="is not users/u1/memories/"):
            entry_of(json.dumps({"text": "a", "name": name}), "f:1", "u1")
