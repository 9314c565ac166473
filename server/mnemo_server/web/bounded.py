"""uvicorn's HTTP/1.1 protocol with two bounds it lacks: a header-read
timeout and a connection cap.

- uvicorn keeps a connection that trickles header bytes open for ever (its
  keep-alive timer is cancelled by every byte received): a few hundred such
  clients hold the port. Here each request's headers must be complete within
  ``header_timeout`` seconds of the connection's start or of the previous
  response's end, or the connection is closed.
- uvicorn's ``limit_concurrency`` answers 503 to requests past its limit but
  still accepts and holds their connections. Here a connection beyond
  ``max_connections`` is closed as soon as it is accepted.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def bounded_protocol(header_timeout: float, max_connections: int) -> type[H11Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)``."""

    class BoundedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._header_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.abort()
                return
            self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._headers_arrived()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:
                self._headers_arrived()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_headers()  # the next request's headers, on a kept-alive connection

        def _await_headers(self) -> None:
            self._headers_arrived()
            self._header_deadline = self.loop.call_later(header_timeout, self._too_slow)

        def _headers_arrived(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _too_slow(self) -> None:
            self._header_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return BoundedH11Protocol
