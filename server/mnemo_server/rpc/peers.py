"""Which client connection a call came on, for the per-peer watch limits.

On the gRPC port that is gRPC's peer (``ipv4:127.0.0.1:53124``: address and
port, so one connection). The web port forwards every browser call over one
private Unix socket (``web.forward``); it names the HTTP connection the call
came on in ``WEB_PEER_KEY``, which is believed only on that socket (a browser's
own header of that name is never forwarded).
"""

from __future__ import annotations

from typing import Any

import grpc

WEB_PEER_KEY = "x-mnemo-web-peer"
_INTERNAL = "unix:"


def client_peer(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The connection the call came on (see the module docstring)."""
    peer: str = context.peer()
    if peer.startswith(_INTERNAL):
        for key, value in context.invocation_metadata() or ():
            if key == WEB_PEER_KEY and isinstance(value, str):
                return f"web:{value}"
    return peer
