"""``mnemo export`` and ``mnemo import`` in a subprocess against a real
server: export -> erase -> import -> export writes the very same file; a
summary line on stderr (and no progress redraws, stderr being no terminal);
refusals and bad files exit non-zero with the reason and leave nothing."""

from __future__ import annotations

import json
from pathlib import Path

import grpc

from tests.api.user_data import erase, export, populate
from tests.support.mnemo_command import run_mnemo


def test_export_erase_import_export_writes_the_same_file(
    server: str, channel: grpc.Channel, tmp_path: Path
) -> None:
    populate(channel, "u1", "Zqxjvalice")
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"

    exported = run_mnemo("export", "--user", "u1", "--output", str(first), "--target", server)
    assert exported.returncode == 0, exported.stderr
    records = len(export(channel, "u1"))
    summary = exported.stderr
    assert summary.startswith(f"mnemo: exported {records} records (")
    assert summary.endswith(f") of users/u1 to {first}\n") and summary.count("\n") == 1
    lines = first.read_text(encoding="utf-8").splitlines()
    assert len(lines) == records
    assert [list(json.loads(line)) for line in lines[:2]] == [["consent"], ["memorySettings"]]
    assert not (tmp_path / "first.jsonl.partial").exists()

    erase(channel, "u1")
    imported = run_mnemo("import", "--user", "u1", "--input", str(first), "--target", server)
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr.startswith(f"mnemo: imported {records} records (")
    assert "conversation 4, document 4, event " in imported.stderr and "\r" not in imported.stderr

    again = run_mnemo("export", "--user", "u1", "--output", str(second), "--target", server)
    assert again.returncode == 0, again.stderr
    assert second.read_bytes() == first.read_bytes()


def test_export_to_stdout(server: str, channel: grpc.Channel) -> None:
    populate(channel, "u1", "Zqxjvalice")
    exported = run_mnemo("export", "--user", "u1", "--target", server)
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr.endswith(" of users/u1 to stdout\n")
    assert len(exported.stdout.splitlines()) == len(export(channel, "u1"))


def test_refusals_and_bad_files_exit_non_zero_and_load_nothing(
    server: str, channel: grpc.Channel, tmp_path: Path
) -> None:
    populate(channel, "u1", "Zqxjvalice")
    good = tmp_path / "good.jsonl"
    assert (
        run_mnemo("export", "--user", "u1", "--output", str(good), "--target", server).returncode
        == 0
    )

    refused = run_mnemo("import", "--user", "u1", "--input", str(good), "--target", server)
    assert refused.returncode == 1
    assert "FAILED_PRECONDITION [IMPORT_TARGET_NOT_EMPTY]" in refused.stderr

    lines = good.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines, '{"nonsense": 1}']) + "\n", encoding="utf-8")
    broken = run_mnemo("import", "--user", "u2", "--input", str(bad), "--target", server)
    assert broken.returncode == 2
    assert broken.stderr.startswith(f"mnemo: {bad}:{len(lines) + 1}: not an export record")

    named = run_mnemo("import", "--user", "u2", "--input", str(good), "--target", server)
    assert named.returncode == 2  # u1's names: refused before anything is sent
    assert f"{good} holds the data of users/u1, not of users/u2" in named.stderr
    assert "use --as-user u2 instead of --user" in named.stderr
    assert export(channel, "u2") == []

    missing = run_mnemo("import", "--user", "u2", "--input", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
