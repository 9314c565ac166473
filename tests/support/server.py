"""A real Mnemo server, in process, for tests: its own event loop in a background thread.

    with running_server(database_url) as target:      # "127.0.0.1:PORT"
        channel = grpc.insecure_channel(target)
        ...

The server listens on 127.0.0.1 port 0 (a free port) and uses the given
database; the tests talk to it over real gRPC with the generated stubs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mnemo_server.app import MnemoServer
from mnemo_server.config import Settings

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


class ServerThread:
    """A ``MnemoServer`` running on an event loop in a daemon thread."""

    def __init__(self, settings: Settings, *, tracer_provider: Any = None) -> None:
        self.server = MnemoServer(settings, tracer_provider=tracer_provider)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="mnemo-test-server", daemon=True)
        self._started = threading.Event()
        self._port: int | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._port = self._loop.run_until_complete(self.server.start())
        except BaseException as error:  # reported to the starting thread
            self._error = error
            self._started.set()
            self._loop.close()
            return
        self._started.set()
        self._loop.run_forever()
        self._loop.close()

    def start(self) -> str:
        """Start serving; returns the target ``127.0.0.1:PORT``."""
        self._thread.start()
        if not self._started.wait(START_TIMEOUT_S):
            raise TimeoutError("the test server did not start")
        if self._error is not None:
            raise self._error
        return f"127.0.0.1:{self._port}"

    def stop(self, grace: float | None = None) -> None:
        """Stop the server (in-flight calls get ``grace`` seconds) and its thread."""
        if self._error is not None or not self._thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(self.server.stop(grace), self._loop)
        try:
            future.result(STOP_TIMEOUT_S)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(STOP_TIMEOUT_S)


def server_settings(database_url: str, **overrides: Any) -> Settings:
    """Settings for an in-process test server on a free port of 127.0.0.1.

    Without an ``embedder`` override it has none (the default, ``local``,
    embeds every save with a real model: tests of that path ask for it), so
    that what a test counts (statements, bytes) is the store's alone."""
    overrides.setdefault("embedder", "none")
    return dataclasses.replace(
        Settings(), listen="127.0.0.1:0", database_url=database_url, **overrides
    )


@contextmanager
def running_server(database_url: str, **overrides: Any) -> Iterator[str]:
    """Serve ``database_url`` for the duration of the block; yields the target."""
    thread = ServerThread(server_settings(database_url, **overrides))
    target = thread.start()
    try:
        yield target
    finally:
        thread.stop()
