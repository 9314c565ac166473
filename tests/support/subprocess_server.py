"""A real ``python -m mnemo_server serve`` process, for crash, signal and
multi-process tests.

    with subprocess_server(database_url, log_dir=tmp_path) as server:
        channel = grpc.insecure_channel(server.target)   # "127.0.0.1:PORT"
        ...
        server.kill()        # SIGKILL, like a crash
        server.restart()     # same database, same port when it is still free
        ...
        assert server.stop() == 0   # SIGTERM, wait, SIGKILL if it hangs

The first start listens on 127.0.0.1 port 0 and reads the bound port from
the server's one start line; a restart asks for that port again so clients
keep their target (and falls back to a fresh port if another process took
it). Each start writes stdout and stderr to its own file under ``log_dir``;
every failure message carries the end of that file. Leaving the context
manager always ends the process (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
KILL_TIMEOUT_S = 30.0
LOG_TAIL_CHARS = 4000

_SERVING_ON = re.compile(r" serving on (\S+):(\d+) ")
_CANNOT_LISTEN = "cannot listen on"
_POLL_S = 0.05


class ServerProcessError(AssertionError):
    """The server process did not start, or did not stop in time; the message
    carries the end of its log."""


class SubprocessServer:
    """One ``mnemo serve`` process at a time on one database.

    ``args`` are extra ``serve`` flags (``--listen`` and ``--database-url``
    are set here); ``env`` is added to this process's environment.
    """

    def __init__(
        self,
        database_url: str,
        log_dir: Path,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.database_url = database_url
        self.log_dir = log_dir
        self.args = tuple(args)
        self.env = dict(env or {})
        self.starts = 0
        self._port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None

    # ------------------------------------------------------------ queries

    @property
    def target(self) -> str:
        """``127.0.0.1:PORT`` of the running (or last) process."""
        if not self._port:
            raise ServerProcessError("the server was never started")
        return f"127.0.0.1:{self._port}"

    @property
    def port(self) -> int:
        if not self._port:
            raise ServerProcessError("the server was never started")
        return self._port

    @property
    def pid(self) -> int:
        return self._running().pid

    @property
    def returncode(self) -> int | None:
        """The exit code of the last process, ``None`` while it runs."""
        return None if self._process is None else self._process.poll()

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_text(self) -> str:
        """Everything the current (or last) process wrote to stdout and stderr."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(errors="replace")

    def log_tail(self) -> str:
        return self.log_text()[-LOG_TAIL_CHARS:]

    # ----------------------------------------------------------- control

    def start(self) -> str:
        """Start a process and wait (bounded) until health is SERVING; returns
        the target. Raises ``ServerProcessError`` if it exits or hangs."""
        if self.is_running():
            raise ServerProcessError(f"already running as pid {self.pid}")
        if self._port and self._launch_and_wait(self._port):
            return self.target
        if not self._launch_and_wait(0):
            raise ServerProcessError(self._describe("could not bind a port"))
        return self.target

    def restart(self) -> str:
        """Stop the running process if any (SIGTERM), then start again on the
        same database; returns the target (the same port when still free)."""
        if self.is_running():
            self.stop()
        return self.start()

    def terminate(self) -> None:
        """Send SIGTERM and return at once (``wait`` for the exit code)."""
        self._running().send_signal(signal.SIGTERM)

    def wait(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """Wait for the process to exit; returns its exit code. Raises
        ``ServerProcessError`` (after a SIGKILL) if it outlives ``timeout``."""
        process = self._running_or_exited()
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(KILL_TIMEOUT_S)
            raise ServerProcessError(
                self._describe(f"did not exit within {timeout}s; killed")
            ) from None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM, wait up to ``timeout`` (then SIGKILL and raise); returns
        the exit code (0 for a clean stop)."""
        process = self._running_or_exited()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        """SIGKILL, like a crash or a power cut of the process, and reap it."""
        process = self._running()
        process.kill()
        process.wait(KILL_TIMEOUT_S)

    def close(self) -> None:
        """End the process if it still runs: SIGTERM, then SIGKILL."""
        end_process(self._process, signal.SIGTERM, STOP_TIMEOUT_S)

    # ---------------------------------------------------------- internals

    def _running(self) -> subprocess.Popen[bytes]:
        process = self._running_or_exited()
        if process.poll() is not None:
            raise ServerProcessError(self._describe("is not running"))
        return process

    def _running_or_exited(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise ServerProcessError("the server was never started")
        return self._process

    def _launch_and_wait(self, port: int) -> bool:
        """Launch on ``port`` (0: any free one); ``False`` if that port could
        not be bound, ``True`` once SERVING."""
        self.starts += 1
        self._log_path = self.log_dir / f"mnemo-serve-{self.starts}.log"
        command = [
            sys.executable,
            "-m",
            "mnemo_server",
            "serve",
            "--listen",
            f"127.0.0.1:{port}",
            "--database-url",
            self.database_url,
            *self.args,
        ]
        with self._log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # A crash of the server (SIGSEGV, SIGABRT) leaves every thread's
                # traceback in the log.
                env={**os.environ, "PYTHONFAULTHANDLER": "1", **self.env},
            )
        bound = self._wait_bound()
        if bound is None:
            return False
        self._port = bound
        self._wait_serving()
        return True

    def _wait_bound(self) -> int | None:
        """The port from the start line; ``None`` if the port was taken."""
        process = self._running_or_exited()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            match = _SERVING_ON.search(self.log_text())
            if match:
                return int(match.group(2))
            if process.poll() is not None:
                if _CANNOT_LISTEN in self.log_text():
                    return None
                raise ServerProcessError(self._describe(f"exited with {process.returncode}"))
            time.sleep(_POLL_S)
        self.close()
        raise ServerProcessError(self._describe(f"did not start within {START_TIMEOUT_S}s"))

    def _wait_serving(self) -> None:
        process = self._running()
        deadline = time.monotonic() + START_TIMEOUT_S
        with grpc.insecure_channel(self.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    raise ServerProcessError(self._describe(f"exited with {process.returncode}"))
                try:
                    response = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                except grpc.RpcError:
                    response = None
                if (
                    response is not None
                    and response.status == health_pb2.HealthCheckResponse.SERVING
                ):
                    return
                time.sleep(_POLL_S)
        self.close()
        raise ServerProcessError(self._describe(f"was not SERVING within {START_TIMEOUT_S}s"))

    def _describe(self, what: str) -> str:
        return f"mnemo serve ({self._log_path}) {what}; its log ends with:\n{self.log_tail()}"


@contextmanager
def subprocess_server(
    database_url: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    log_dir: Path | None = None,
) -> Iterator[SubprocessServer]:
    """A started ``mnemo serve`` on ``database_url`` for the block; always
    ended afterwards. ``log_dir`` defaults to a temporary directory that is
    removed with the block."""
    with _directory(log_dir) as directory:
        server = SubprocessServer(database_url, directory, args, env)
        try:
            server.start()
            yield server
        finally:
            server.close()


@contextmanager
def _directory(given: Path | None) -> Iterator[Path]:
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="mnemo-serve-") as name:
        yield Path(name)


def end_process(
    process: subprocess.Popen[bytes] | None, graceful: signal.Signals, wait_s: float
) -> None:
    """Stop ``process`` if it still runs: ``graceful``, then SIGKILL after
    ``wait_s`` seconds; reaped either way."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(graceful)
    try:
        process.wait(wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(KILL_TIMEOUT_S)


__all__ = ["ServerProcessError", "SubprocessServer", "end_process", "subprocess_server"]
