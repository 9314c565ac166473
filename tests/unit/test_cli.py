"""The ``mnemo`` command's own answers, in-process (``cli.main.main``): its
version, the usage a mistyped flag gets, and ``mnemo embeddings`` where there
is no database or a PostgreSQL that is not running (nothing created, one line)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mnemo_server import __version__
from mnemo_server.cli.main import main

# Every subcommand with the arguments it requires, so that the mistyped flag
# is the only error.
COMMANDS = (
    ("serve",),
    ("migrate",),
    ("version",),
    ("embeddings",),
    ("health",),
    ("export", "--user", "ada"),
    ("import", "--user", "ada", "--input", "ada.jsonl"),
    ("mcp",),
    ("users", "erase", "ada"),
    ("changes", "tail", "--user", "ada"),
)


def test_version_flag_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"mnemo {__version__}\n"


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[0])
def test_a_mistyped_flag_gets_the_usage_of_its_subcommand(
    argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--no-such-flag"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    command = " ".join(argv[:2] if argv[0] in ("users", "changes") else argv[:1])
    assert err.startswith(f"usage: mnemo {command} "), err
    assert err.rstrip().endswith(f"mnemo {command}: error: unrecognized arguments: --no-such-flag")


def test_embeddings_without_a_database_says_so_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["embeddings"], env={}) == 1
    out, err = capsys.readouterr()
    database = tmp_path / "data" / "mnemo.db"
    assert out == ""
    assert err == (
        f"mnemo: there is no database at {database}: `mnemo serve` creates it at its first "
        "start; point --data-dir or --database-url at a server's database\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_embeddings_of_a_postgresql_that_is_not_running_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://mnemo:pw@127.0.0.1:{port}/mnemo"
    assert main(["embeddings", "--database-url", url], env={}) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        f"mnemo: the database postgresql 127.0.0.1:{port}/mnemo cannot be used: connection failed"
    )
    assert err.count("\n") == 1 and "Traceback" not in err and "pw" not in err
