"""``mnemo users erase``, ``mnemo import --as-user`` and ``mnemo changes
tail`` in a subprocess against a real server (SQLite: the commands are
clients; the store suites cover both backends)."""

from __future__ import annotations

import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import grpc
import pytest

from mnemo.client import MnemoClient
from mnemo_server.cli.renaming import renamed
from tests.api.user_data import export, populate, serialized
from tests.support.mnemo_command import run_mnemo
from tests.support.subprocess_server import subprocess_server

pytestmark = [pytest.mark.sqlite, pytest.mark.parametrize("backend", ["sqlite"], indirect=True)]

LINE_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 30.0


def _erase(server: str, *args: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemo_server", "users", "erase", *args, "--target", server],
        input=answer if answer is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_erase_asks_and_a_no_loses_nothing(server: str, channel: grpc.Channel) -> None:
    populate(channel, "u1", "Zqxjvalice")
    before = serialized(export(channel, "u1"))

    declined = _erase(server, "u1", answer="n\n")
    assert declined.returncode == 1, declined.stderr
    assert "Erase everything stored for users/u1" in declined.stderr
    assert "users/u1 not erased (nothing changed)" in declined.stderr
    assert declined.stdout == ""
    no_answer = _erase(server, "u1", answer="")  # end of input: no
    assert no_answer.returncode == 1, no_answer.stderr
    assert serialized(export(channel, "u1")) == before

    confirmed = _erase(server, "u1", answer="yes\n")
    assert confirmed.returncode == 0, confirmed.stderr
    heading, *rows = confirmed.stdout.splitlines()
    assert heading.startswith("erased users/u1 at ") and heading.endswith("):")
    tables = {line.split()[0]: line.split()[1] for line in rows if line.startswith("  ")}
    assert {"conversations", "messages", "memories", "documents", "total"} <= set(tables)
    assert rows[-1].startswith("kept (the consent decision and memory switch stay in force)")
    assert {r.WhichOneof("record") for r in export(channel, "u1")} <= {
        "consent",
        "memory_settings",
    }


def test_erase_with_yes_asks_nothing(server: str, channel: grpc.Channel) -> None:
    populate(channel, "u2", "Zqxjvbob")
    erased = _erase(server, "u2", "--yes")
    assert erased.returncode == 0, erased.stderr
    assert "Erase everything" not in erased.stderr
    assert erased.stdout.startswith("erased users/u2 at ")
    again = _erase(server, "u2", "--yes")
    assert again.returncode == 3, again.stderr  # nothing to erase: a script can tell
    assert again.stdout.startswith("users/u2 had no data: nothing erased\n")


def test_import_as_another_user_rewrites_every_name(
    server: str, channel: grpc.Channel, tmp_path: Path
) -> None:
    populate(channel, "alice", "Zqxjvalice")
    alice = export(channel, "alice")
    path = tmp_path / "alice.jsonl"
    exported = run_mnemo("export", "--user", "alice", "--output", str(path), "--target", server)
    assert exported.returncode == 0, exported.stderr

    refused = run_mnemo("import", "--user", "bob", "--input", str(path), "--target", server)
    assert refused.returncode == 2
    assert "use --as-user bob instead of --user" in refused.stderr
    assert export(channel, "bob") == []

    imported = run_mnemo("import", "--as-user", "bob", "--input", str(path), "--target", server)
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr.startswith(f"mnemo: imported {len(alice)} records (")
    assert "into users/bob (names of users/alice rewritten): " in imported.stderr
    bob = export(channel, "bob")
    assert serialized(bob) == serialized(renamed(r, "alice", "bob") for r in alice)
    assert not any(b"users/alice" in record for record in serialized(bob))
    assert serialized(export(channel, "alice")) == serialized(alice)


def _tail(server: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mnemo_server", "changes", "tail", *args, "--target", server],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ended(tail: subprocess.Popen[str]) -> None:
    if tail.poll() is None:
        tail.kill()
        tail.wait()


class _Lines:
    """The lines of a pipe, read by a thread, taken with a bound."""

    def __init__(self, pipe: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._reader.start()

    def _read(self, pipe: IO[str]) -> None:
        for line in pipe:
            self._lines.put(line.rstrip("\n"))

    def next(self) -> str:
        return self._lines.get(timeout=LINE_TIMEOUT_S)

    def until(self, start: str) -> str:
        while not (line := self.next()).startswith(start):
            pass
        return line

    def rest(self) -> list[str]:
        """The lines not taken yet, once the pipe has ended (bounded)."""
        self._reader.join(LINE_TIMEOUT_S)
        lines = []
        while not self._lines.empty():
            lines.append(self._lines.get_nowait())
        return lines


def test_changes_tail_prints_another_clients_changes_until_ctrl_c(server: str) -> None:
    with MnemoClient(server) as client:
        client.create_memory("u1", "Written before the tail")
        tail = _tail(server, "--user", "u1")
        try:
            out, err = _Lines(tail.stdout), _Lines(tail.stderr)  # type: ignore[arg-type]
            assert err.until("mnemo: following users/u1 after cursor ") == (
                "mnemo: following users/u1 after cursor 1 (Ctrl-C to stop)"
            )
            err.until("mnemo: caught up at cursor 1")
            name = client.create_memory("u1", "Lives in Oslo").memory.name
            client.delete_memory("u1", name.rpartition("/")[2])
            first, second = out.next().split(" "), out.next().split(" ")
            assert first[0] == "2" and first[2:4] == ["upsert", name]
            assert first[4:] == ["memory", '"Lives', "in", 'Oslo"']
            assert second[0] == "3" and second[2:5] == ["delete", name, "tombstone"]
            tail.send_signal(signal.SIGINT)
            assert tail.wait(EXIT_TIMEOUT_S) == 0
            assert err.next() == (
                "mnemo: stopped after cursor 3 (2 changes printed); go on with --after 3"
            )
        finally:
            _ended(tail)

    replay = run_mnemo(
        "changes", "tail", "--user", "u1", "--after", "0", "--count", "2", "--target", server
    )
    assert replay.returncode == 0, replay.stderr
    assert [line.split(" ")[0] for line in replay.stdout.splitlines()] == ["1", "2"]


def test_changes_tail_resumes_across_a_server_restart(database_url: str, tmp_path: Path) -> None:
    with subprocess_server(database_url, log_dir=tmp_path) as server:
        tail = _tail(server.target, "--user", "u1", "--count", "2")
        try:
            out, err = _Lines(tail.stdout), _Lines(tail.stderr)  # type: ignore[arg-type]
            err.until("mnemo: caught up at cursor 0")
            with MnemoClient(server.target) as client:
                client.create_memory("u1", "Before the restart")
            assert out.next().startswith("1 ")
            server.restart()  # same port: the tail's watch ends and is resumed
            with MnemoClient(server.target) as client:
                client.create_memory("u1", "After the restart")
            assert out.next().split(" ")[0] == "2"
            assert tail.wait(EXIT_TIMEOUT_S) == 0  # --count 2
            said = err.rest()
            # Once per outage, naming the server: not a line per retry.
            assert (
                sum(f"the watch of {server.target} ended (UNAVAILABLE" in x for x in said) == 1
            ), said
            assert said.count(f"mnemo: resumed the watch of {server.target}") == 1, said
        finally:
            _ended(tail)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_server_that_is_not_there_is_named_with_what_to_do(server: str) -> None:
    nobody = f"127.0.0.1:{_free_port()}"
    tail = run_mnemo("changes", "tail", "--user", "u1", "--after", "0", "--target", nobody)
    exported = run_mnemo("export", "--user", "u1", "--target", nobody)
    for ran in (tail, exported):
        assert ran.returncode == 1, ran.stderr
        assert f"cannot reach a Mnemo server at {nobody}: is `mnemo serve` running there?" in (
            ran.stderr
        )
        assert "--target or $MNEMO_TARGET" in ran.stderr
        assert ran.stdout == ""


def test_the_target_comes_from_mnemo_target_and_its_default_is_shown(server: str) -> None:
    with MnemoClient(server) as client:
        client.create_memory("u1", "Lives in Oslo")
    exported = run_mnemo("export", "--user", "u1", env={"MNEMO_TARGET": server})
    assert exported.returncode == 0, exported.stderr
    assert '"Lives in Oslo"' in exported.stdout
    flag = run_mnemo("export", "--user", "u1", "--target", server, env={"MNEMO_TARGET": "x:1"})
    assert flag.returncode == 0, flag.stderr  # the flag wins
    helped = run_mnemo("export", "--help")
    assert "$MNEMO_TARGET, else 127.0.0.1:50051" in " ".join(helped.stdout.split())


def test_a_user_without_data_is_said_and_exits_3(server: str, tmp_path: Path) -> None:
    output = tmp_path / "export" / "nobody.jsonl"
    output.parent.mkdir()
    exported = run_mnemo("export", "--user", "nobody", "--output", str(output), "--target", server)
    assert exported.returncode == 3, exported.stderr
    assert "users/nobody has no data: nothing exported (no file written)" in exported.stderr
    assert not list(output.parent.iterdir())
    erased = _erase(server, "nobody", "--yes")
    assert erased.returncode == 3, erased.stderr
    assert erased.stdout.strip() == "users/nobody had no data: nothing erased"


def test_health_says_serving_or_what_to_do(server: str) -> None:
    serving = run_mnemo("health", "--target", server)
    assert (serving.returncode, serving.stdout) == (0, "SERVING\n"), serving.stderr
    nobody = f"127.0.0.1:{_free_port()}"
    away = run_mnemo("health", env={"MNEMO_TARGET": nobody})
    assert away.returncode == 1 and away.stdout == ""
    assert f"cannot reach a Mnemo server at {nobody}" in away.stderr


def test_the_ca_file_comes_from_mnemo_ca_file_too(server: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-ca.pem"
    for command in (["health"], ["export", "--user", "u1"]):
        ran = run_mnemo(*command, "--target", server, env={"MNEMO_CA_FILE": str(missing)})
        assert ran.returncode == 2, ran.stderr
        assert f"cannot read {missing}" in ran.stderr


def test_the_timeout_comes_from_mnemo_timeout_too(server: str) -> None:
    for command in (["health"], ["export", "--user", "u1"]):
        ran = run_mnemo(*command, "--target", server, env={"MNEMO_TIMEOUT": "soon"})
        assert ran.returncode == 2, ran.stderr
        assert "$MNEMO_TIMEOUT must be a number of seconds (got 'soon')" in ran.stderr
    assert run_mnemo("health", "--target", server, env={"MNEMO_TIMEOUT": "7"}).returncode == 0
    helped = " ".join(run_mnemo("changes", "tail", "--help").stdout.split())
    assert "(default: $MNEMO_TIMEOUT, else 30)" in helped
