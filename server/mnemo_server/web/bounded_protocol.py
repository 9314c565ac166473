"""uvicorn's HTTP/1.1 protocol with three bounds it lacks: a header-read
timeout, a body-read timeout and a connection cap.

- uvicorn keeps a connection that trickles header bytes open for ever (its
  keep-alive timer is cancelled by every byte received): a few hundred such
  clients hold the port. Here each request's headers must be complete within
  ``header_timeout`` seconds of the connection's start or of the previous
  response's end, or the connection is closed. That includes a connection
  whose previous request was answered before its body was read (a 421, say):
  once that body is in, the next request's headers are timed too.
- Complete headers announcing a body that never comes hold a connection the
  same way. Here a request's body must be complete within ``body_timeout``
  seconds of the end of its headers: one deadline for the whole body, not an
  idle-read timeout (a byte every few seconds would reset that for ever, as it
  does uvicorn's keep-alive timer). Past it the client gets 408 if no
  response has started, and the connection is closed. The timer runs only
  while h11 still expects request body (``their_state`` ``SEND_BODY``): a
  server stream (a watch) whose request is complete is never cut by it. The
  web app reads a body as it arrives (``asgi.read_body``), so the time
  counted is the client's, not the server's.
- uvicorn's ``limit_concurrency`` answers 503 to requests past its limit but
  still accepts and holds their connections. Here a connection beyond
  ``max_connections`` is closed as soon as it is accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def bounded_protocol(
    header_timeout: float, body_timeout: float, max_connections: int
) -> type[H11Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)``."""

    class BoundedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._header_deadline = _Deadline()
            self._body_deadline = _Deadline()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.abort()
                return
            self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._header_deadline.cancel()
            self._body_deadline.cancel()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            state = self.conn.their_state
            if state is not h11.IDLE:
                self._header_deadline.cancel()
            elif not self._header_deadline.pending and not self.transport.is_closing():
                self._await_headers()  # after a body read past an early response
            if state is not h11.SEND_BODY:
                self._body_deadline.cancel()
            elif not self._body_deadline.pending:
                self._body_deadline.start(self.loop, body_timeout, self._body_too_slow)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_headers()  # the next request's headers, on a kept-alive connection

        def _await_headers(self) -> None:
            self._header_deadline.start(self.loop, header_timeout, self._too_slow)

        def _too_slow(self) -> None:
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def _body_too_slow(self) -> None:
            if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
                return
            cycle = self.cycle
            if cycle is not None and not cycle.response_started:
                cycle.disconnected = True  # the application's own answer is dropped
                cycle.message_event.set()  # and its read of the body ends
                with contextlib.suppress(h11.LocalProtocolError):
                    self.transport.write(_timed_out(self.conn, body_timeout))
            self.transport.close()

    return BoundedH11Protocol


class _Deadline:
    """One timer of a connection (its headers', its body's): pending from
    ``start`` until it is cancelled or fires. ``start`` and ``cancel`` never
    raise; what ``expired`` raises goes to the loop's exception handler, as
    for any timer callback."""

    def __init__(self) -> None:
        self._timer: asyncio.TimerHandle | None = None

    @property
    def pending(self) -> bool:
        return self._timer is not None

    def start(
        self, loop: asyncio.AbstractEventLoop, seconds: float, expired: Callable[[], None]
    ) -> None:
        """Call ``expired`` in ``seconds`` (after which it is no longer
        pending), replacing the pending timer, if any."""
        self.cancel()
        self._timer = loop.call_later(seconds, self._fire, expired)

    def cancel(self) -> None:
        """Stop the pending timer, if any."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, expired: Callable[[], None]) -> None:
        self._timer = None
        expired()


def _timed_out(conn: h11.Connection, body_timeout: float) -> bytes:
    """A whole 408 response that closes the connection."""
    text = (
        f"the request body was not complete within {body_timeout:g} s of its headers "
        "(--web-body-timeout-seconds)\n"
    ).encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(text)).encode()),
        (b"connection", b"close"),
    ]
    response = h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")
    return b"".join(
        conn.send(event) or b"" for event in (response, h11.Data(data=text), h11.EndOfMessage())
    )
