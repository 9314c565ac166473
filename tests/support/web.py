"""A real Mnemo server with its web port (gRPC-Web, Connect, the console) on
127.0.0.1, in process, for tests that speak raw HTTP to it."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.support.server import ServerThread, server_settings

HTTP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class WebServer:
    thread: ServerThread

    @property
    def port(self) -> int:
        port = self.thread.server.web_port
        assert port is not None
        return port

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=HTTP_TIMEOUT_S)


@contextmanager
def serving_web(database_url: str, **overrides: Any) -> Iterator[WebServer]:
    """A server on ``database_url`` with ``--web-listen 127.0.0.1:0`` and ``overrides``."""
    thread = ServerThread(server_settings(database_url, web_listen="127.0.0.1:0", **overrides))
    thread.start()
    try:
        yield WebServer(thread)
    finally:
        thread.stop(grace=1)
