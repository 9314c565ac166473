"""Serving an MCP server built by ``build_server``: over stdio (a desktop
assistant or an IDE launches ``mnemo mcp`` and speaks on its stdin/stdout) or
over streamable HTTP (``http://HOST:PORT/mcp``).

Whoever the HTTP endpoint serves acts as the server's user, so every HTTP
request must carry ``Authorization: Bearer <token>`` with the token given to
``serve_http`` (compared in constant time); any other request is answered 401
with ``WWW-Authenticate: Bearer`` before the MCP server sees it. Keep it on
loopback too: the SDK then also refuses requests whose ``Host`` or ``Origin``
header is not a loopback one (DNS rebinding), token or not.
"""

from __future__ import annotations

import hmac
import json
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

HTTP_PATH = "/mcp"
REALM = "mnemo-mcp"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]


class BearerGate:
    """An ASGI wrapper that lets through only HTTP requests bearing ``token``."""

    def __init__(self, app: Asgi, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            sent = _authorization(scope)
            if sent is None or not hmac.compare_digest(sent, self._expected):
                await _unauthorized(send, had_credentials=sent is not None)
                return
        await self._app(scope, receive, send)


def _authorization(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            return bytes(value)
    return None


async def _unauthorized(send: Send, had_credentials: bool) -> None:
    """401 as RFC 6750 says: ``invalid_token`` when a credential was sent."""
    challenge = f'Bearer realm="{REALM}"'
    if had_credentials:
        challenge += ', error="invalid_token"'
    body = json.dumps(
        {
            "error": "invalid_token" if had_credentials else "unauthorized",
            "error_description": "send the token mnemo mcp printed at start (also in its "
            "--http-token-file) as: Authorization: Bearer <token>",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve on this process's stdin and stdout until stdin closes."""
    await server.run_stdio_async()


def http_url(host: str, port: int) -> str:
    """``http://HOST:PORT/mcp`` (an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{HTTP_PATH}"


async def serve_http(
    server: MCPServer[Any],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    bearer_token: str,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve streamable HTTP on ``host:port`` (0: a free port) until SIGINT or
    SIGTERM, then return; every request must bear ``bearer_token`` (module
    docstring); ``on_listening`` gets the endpoint's URL once the port is bound.

    Raises:
        OSError: the address cannot be bound.
        ValueError: ``bearer_token`` is empty.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
        app = server.streamable_http_app(host=host, streamable_http_path=HTTP_PATH)
        gated = BearerGate(app, bearer_token)
        config = uvicorn.Config(gated, log_level="warning", lifespan="on")
        web = uvicorn.Server(config)
        if on_listening is not None:
            on_listening(http_url(host, sock.getsockname()[1]))
        with _stop_signals_end_quietly():
            await web.serve(sockets=[sock])
    finally:
        sock.close()


@contextmanager
def _stop_signals_end_quietly() -> Iterator[None]:
    """While uvicorn serves, SIGINT and SIGTERM stop it gracefully (its own
    handlers); afterwards it raises the signal again for the handler it found,
    which would end the process by the signal. Here that handler does nothing,
    so ``serve_http`` returns and the command exits 0 after a clean stop."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {stop: signal.signal(stop, lambda number, frame: None) for stop in stops}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
