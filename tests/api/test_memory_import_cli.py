"""``mnemo import --memories`` in a subprocess against a real server, on both
backends: entries in order in batches of ``--batch-size`` (ids from ``name``,
vectors, keyed supersede across batches); a rerun saves nothing twice; a
refused batch stops the load, names its line, and the same command after the
fix loads the rest exactly once; bad lines and bad usage load nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import grpc

from mnemo.v1 import memories_pb2 as pb
from tests.api.memories import Stub, listed, recall, vector
from tests.support.mnemo_command import run_mnemo

USER = "importer"


def _import(server: str, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_mnemo("import", "--user", USER, "--memories", str(path), "--target", server, *extra)


def _write(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def _entries(count: int) -> list[dict[str, Any]]:
    return [{"text": f"Fact number {n}", "metadata": {"n": str(n)}} for n in range(count)]


def _stored(channel: grpc.Channel) -> list[pb.Memory]:
    """Every entry of the user, archived too, newest first."""
    return listed(Stub(channel), f"users/{USER}", include_archived=True)


def test_entries_load_in_batches_in_order_and_a_rerun_saves_nothing_twice(
    server: str, channel: grpc.Channel, tmp_path: Path
) -> None:
    entries = _entries(25)
    entries[0] |= {"name": f"users/{USER}/memories/first", "key": "home", "text": "Lives in Lyon"}
    entries[24] |= {"key": "home", "text": "Lives in Paris"}  # supersedes across batches
    entries[3]["embedding"] = {"model": "test-4d", "values": [1, 0, 0, 0]}
    path = _write(tmp_path / "memories.jsonl", entries)
    path.write_text(path.read_text() + "\n", encoding="utf-8")  # a blank line is skipped

    loaded = _import(server, path, "--batch-size", "10")
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stderr.startswith("mnemo: imported 25 memories (")
    assert loaded.stderr.endswith(
        f") in 3 batches into users/{USER}; archived 1 entry (keyed supersede)\n"
    )
    assert "\r" not in loaded.stderr  # no progress redraws: stderr is no terminal
    stored = _stored(channel)
    assert [m.text for m in reversed(stored)] == [e["text"] for e in entries]  # newest first
    lyon = stored[-1]
    assert lyon.name == f"users/{USER}/memories/first" and lyon.HasField("archive_time")
    hits = recall(
        Stub(channel),
        "Fact",
        parent=f"users/{USER}",
        semantic=True,
        query_embedding=vector(1, 0, 0, 0),
    )
    assert hits[0].memory.text == "Fact number 3"

    again = _import(server, path, "--batch-size", "10")
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith("mnemo: stored 0 of 25 memories (")
    assert again.stderr.endswith(
        f") in 3 batches into users/{USER}; skipped 25 already saved by an earlier run of this "
        "import\n"
    )
    assert len(_stored(channel)) == 25


def test_entries_already_stored_are_reported_as_skipped(
    server: str, channel: grpc.Channel, tmp_path: Path
) -> None:
    first = _import(server, _write(tmp_path / "first.jsonl", _entries(5)))
    assert first.stderr.startswith("mnemo: imported 5 memories ("), first.stderr
    # The same five facts, then two new ones: other batches (other request ids),
    # whose repeats the server stores nothing for (SAVE_OUTCOME_DUPLICATE).
    more = _write(tmp_path / "more.jsonl", _entries(7))
    second = _import(server, more, "--batch-size", "3")
    assert second.returncode == 0, second.stderr
    assert second.stderr.startswith("mnemo: stored 2 of 7 memories ("), second.stderr
    assert second.stderr.endswith(
        f") in 3 batches into users/{USER}; skipped 5 duplicates of live entries\n"
    )
    again = _import(server, more, "--batch-size", "3")
    assert again.stderr.endswith(
        f") in 3 batches into users/{USER}; skipped 7: 5 duplicates of live entries, 2 already "
        "saved by an earlier run of this import\n"
    ), again.stderr
    assert len(_stored(channel)) == 7


def test_a_refused_batch_names_its_line_and_the_same_command_resumes(
    server: str, channel: grpc.Channel, tmp_path: Path
) -> None:
    entries = _entries(30)
    entries[14]["text"] = "x" * 5000  # over the 4 KiB limit: the second batch is refused
    path = _write(tmp_path / "memories.jsonl", entries)

    refused = _import(server, path, "--batch-size", "10")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        f"mnemo: batch 2 ({path}:11-20) was refused: INVALID_ARGUMENT [FIELD_TOO_LARGE]"
    )
    assert f"  requests[4] is {path}:15\n" in refused.stderr
    assert "mnemo: 10 memories of the batches before it are saved." in refused.stderr
    assert len(_stored(channel)) == 10

    entries[14]["text"] = "Fact number 14"
    _write(path, entries)
    resumed = _import(server, path, "--batch-size", "10")
    assert resumed.returncode == 0, resumed.stderr
    assert [m.text for m in reversed(_stored(channel))] == [e["text"] for e in entries]


def test_bad_lines_and_bad_usage_load_nothing(
    server: str, channel: grpc.Channel, tmp_path: Path
) -> None:
    entries = _entries(5)
    not_json = tmp_path / "not-json.jsonl"
    not_json.write_text(json.dumps(entries[0]) + "\n{nonsense\n", encoding="utf-8")
    broken = _import(server, not_json)
    assert broken.returncode == 2
    assert broken.stderr.startswith(f"mnemo: {not_json}:2: not a mnemo.v1.Memory (")

    other_user = _write(tmp_path / "other.jsonl", [{"text": "x", "name": "users/bob/memories/m"}])
    foreign = _import(server, other_user)
    assert foreign.returncode == 2
    assert f"name 'users/bob/memories/m' is not users/{USER}/memories/{{id}}" in foreign.stderr

    good = _write(tmp_path / "good.jsonl", entries)
    too_large = _import(server, good, "--batch-size", "1001")
    assert too_large.returncode == 2 and "--batch-size" in too_large.stderr
    both = _import(server, good, "--input", str(good))
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    assert _stored(channel) == []
