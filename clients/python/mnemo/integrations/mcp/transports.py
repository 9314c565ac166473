"""Serving an MCP server built by ``build_server``: over stdio (a desktop
assistant or an IDE launches ``mnemo mcp`` and speaks on its stdin/stdout) or
over streamable HTTP (``http://HOST:PORT/mcp``).

The HTTP endpoint has no authentication of its own: whoever reaches it acts
as the server's user. Keep it on loopback (the SDK then also refuses
requests whose ``Host`` or ``Origin`` header is not a loopback one, against
DNS rebinding).
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

HTTP_PATH = "/mcp"


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
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve streamable HTTP on ``host:port`` (0: a free port) until SIGINT or
    SIGTERM, then return; ``on_listening`` gets the endpoint's URL once the
    port is bound.

    Raises:
        OSError: the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
        app = server.streamable_http_app(host=host, streamable_http_path=HTTP_PATH)
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
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
