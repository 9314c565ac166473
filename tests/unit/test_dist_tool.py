"""``make dist`` (tools/dist.py) without the tools a kind needs: one line
naming them and the ``--only`` that builds the rest, exit 2, nothing built."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _dist(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "dist.py"), *args],
        env={**os.environ, "PATH": str(path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _path_with(tmp_path: Path, *programs: str) -> Path:
    """A PATH directory holding only ``programs`` (stubs: dist.py stops
    before running any)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in programs:
        stub = bin_dir / program
        stub.write_text("#!/bin/sh\nexit 99\n")
        stub.chmod(0o755)
    return bin_dir


def test_without_maven_one_line_names_it_and_the_way_out(tmp_path: Path) -> None:
    done = _dist(_path_with(tmp_path, "npm", "node", "java"))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "dist: the Kotlin jar needs mvn (Maven), not found on PATH: install it, "
        'or build the others only: make dist ARGS="--only python,npm"'
    ]
    assert done.stdout == ""


def test_without_npm_nor_a_jdk_every_missing_program_is_named(tmp_path: Path) -> None:
    done = _dist(_path_with(tmp_path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "dist: the npm tarball needs npm (Node.js); the Kotlin jar needs mvn (Maven) and "
        "java (a JDK), not found on PATH: install them, or build the others only: "
        'make dist ARGS="--only python"'
    ]
