"""Binding a listening address, and the one line that says why one cannot be.

A taken port is the commonest first-run failure (a second ``mnemo serve``,
another program on 50051): ``cannot_listen`` names the address, the cause
(in use, not an address of this machine, a privileged port) and the flag and
environment variable that choose another. gRPC's own bind error carries no
cause, so ``bind_error`` binds a plain socket the same way (``SO_REUSEADDR``,
no ``SO_REUSEPORT``, as the server is configured) to learn it.
"""

from __future__ import annotations

import errno
import socket

from mnemo_server.config import listen_host


def bind(listen: str) -> socket.socket:
    """A socket bound to ``HOST:PORT``. Raises ``OSError`` if it cannot be."""
    host = listen_host(listen)
    port = int(listen.rpartition(":")[2])
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def bind_error(listen: str) -> OSError | None:
    """Why ``HOST:PORT`` cannot be bound now, or ``None`` if it can."""
    try:
        bind(listen).close()
    except OSError as error:
        return error
    return None


def cannot_listen(listen: str, flag: str, env: str | None, error: OSError | None) -> str:
    """One line: ``listen`` (set by ``flag`` or the environment variable
    ``env``) cannot be listened on, why (``error``, if known) and how to
    choose another address."""
    choose = f"choose another with {flag} HOST:PORT" + (f" (or {env})" if env else "")
    code = None if error is None else error.errno
    if code == errno.EADDRINUSE:
        port = listen.rpartition(":")[2]
        return (
            f"cannot listen on {listen}: the address is in use (another process listens on "
            f"port {port}): stop it or {choose}"
        )
    if code == errno.EADDRNOTAVAIL:
        return f"cannot listen on {listen}: not an address of this machine: {choose}"
    if code == errno.EACCES:
        return (
            f"cannot listen on {listen}: permission denied (ports below 1024 need privileges): "
            f"{choose}"
        )
    cause = "" if error is None else f": {error.strerror or error}"
    return f"cannot listen on {listen}{cause}: {choose}"
