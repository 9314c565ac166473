"""The ASGI app of the web port: CORS, routing by path and content type, forwarding.

``POST /<service>/<method>`` with a gRPC-Web or Connect content type is decoded
by its protocol, forwarded to the gRPC port (``forward.Forwarder``) and the
call's events are re-encoded into the response as they arrive. A request the
web port cannot carry (unknown method, client-streaming method, malformed
body) is answered in the caller's protocol with the error the gRPC port would
give (``errors.to_status``). When the client disconnects, the forwarded call
is cancelled. ``GET``/``HEAD`` under ``/console`` serve the memory console's
files (``console``). Every request must name the port in ``Host`` (one of
its listening addresses or ``--web-allowed-hosts``; ``hosts``), else it is
answered 421 whatever it asks, against DNS rebinding; a request whose
``Origin`` is one of those names (the console's calls) is same-origin, not
subject to ``--web-cors-origins``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from google.protobuf import empty_pb2

from mnemo_server.domain.errors import InvalidArgument, MnemoError, NotImplementedYet
from mnemo_server.rpc.peers import WEB_PEER_KEY
from mnemo_server.web.connect import connect_for
from mnemo_server.web.console import ConsoleFiles, is_console_path
from mnemo_server.web.cors import CorsPolicy
from mnemo_server.web.forward import CallEnded, CallEvent, Forwarder, InitialMetadata
from mnemo_server.web.grpc_web import grpc_web_for
from mnemo_server.web.hosts import HostPolicy
from mnemo_server.web.metadata import Headers, Outcome, forwarded_metadata, header
from mnemo_server.web.methods import WebMethod
from mnemo_server.web.protocol import (
    AsgiMessage,
    Receive,
    Send,
    WireProtocol,
    send_body,
    start_response,
)

Scope = Mapping[str, Any]


def protocol_for(content_type: str) -> WireProtocol | None:
    """gRPC-Web or Connect (with its codec) for a request content type."""
    return grpc_web_for(content_type) or connect_for(content_type)


async def failed_call(error: MnemoError) -> AsyncIterator[CallEvent]:
    """The events of a call the web port refuses itself."""
    yield InitialMetadata(())
    yield CallEnded(Outcome.of_error(error))


def unknown_method(path: str) -> NotImplementedYet:
    return NotImplementedYet(
        f"{path} is not a method this server offers",
        metadata={"method": path},
        reason="NOT_IMPLEMENTED",
    )


def streamed_request(method: WebMethod) -> NotImplementedYet:
    return NotImplementedYet(
        f"{method.path} streams its requests, which browsers cannot send: call it on the gRPC port",
        metadata={"method": method.path},
        reason="NOT_IMPLEMENTED",
    )


def too_large(limit: int) -> InvalidArgument:
    return InvalidArgument(
        f"the request body is larger than {limit} bytes (--max-request-bytes)",
        reason="FIELD_TOO_LARGE",
        metadata={"field": "request", "limit_bytes": str(limit)},
    )


class BodyTooLarge(Exception):
    """The request body is over the limit (the rest is left unread)."""


class ClientGone(Exception):
    """The client disconnected before sending its whole request."""


async def read_body(receive: Receive, limit: int) -> bytes:
    """The request body. Raises ``BodyTooLarge`` past ``limit`` bytes, ``ClientGone``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _plain(send: Send, status: int, text: str, headers: Headers | None = None) -> None:
    await start_response(
        send, status, [(b"content-type", b"text/plain; charset=utf-8"), *(headers or [])]
    )
    await send_body(send, text.encode(), more=False)


class WebApp:
    """The ASGI application (HTTP only; uvicorn runs it with ``lifespan="off"``)."""

    def __init__(
        self,
        methods: Mapping[str, WebMethod],
        forwarder: Forwarder,
        cors: CorsPolicy,
        hosts: HostPolicy,
        max_request_bytes: int,
    ) -> None:
        self._methods = methods
        self._forwarder = forwarder
        self._cors = cors
        self._hosts = hosts
        self._max_request_bytes = max_request_bytes
        self._console = ConsoleFiles()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers: Headers = list(scope["headers"])
        host = header(headers, b"host")
        if not self._hosts.allows(host):
            await _plain(send, 421, misdirected(host))
            return
        if scope["method"] in ("GET", "HEAD") and is_console_path(scope["path"]):
            await self._console.serve(scope["method"], scope["path"], send)
            return
        origin = header(headers, b"origin")
        if scope["method"] == "OPTIONS":
            await self._preflight(send, headers, origin)
            return
        if origin is not None and not self._hosts.is_own_origin(origin):
            if not self._cors.allows(origin):
                await _plain(send, 403, f"origin {origin} is not allowed (--web-cors-origins)")
                return
            send = _with_headers(send, self._cors.response_headers(origin))
        if scope["method"] != "POST":
            await _plain(send, 405, "only POST is served", [(b"allow", b"POST, OPTIONS")])
            return
        protocol = protocol_for(header(headers, b"content-type") or "")
        if protocol is None:
            await _plain(send, 415, "expected a gRPC-Web or Connect content type")
            return
        client = "{}:{}".format(*(scope.get("client") or ("?", 0)))
        await self._serve(scope["path"], protocol, headers, client, receive, send)

    async def _preflight(self, send: Send, headers: Headers, origin: str | None) -> None:
        method = header(headers, b"access-control-request-method")
        if origin is None or method is None:
            await start_response(send, 204, [(b"allow", b"POST, OPTIONS")])
            await send_body(send, b"", more=False)
        elif self._cors.allows(origin) and method.upper() == "POST":
            requested = header(headers, b"access-control-request-headers")
            await start_response(send, 204, self._cors.preflight_headers(origin, requested))
            await send_body(send, b"", more=False)
        else:
            await _plain(send, 403, f"origin {origin} may not call this server")

    async def _serve(
        self,
        path: str,
        protocol: WireProtocol,
        headers: Headers,
        client: str,
        receive: Receive,
        send: Send,
    ) -> None:
        method = self._methods.get(path)
        limit = protocol.body_limit(self._max_request_bytes)
        try:
            body = await read_body(receive, limit)
        except BodyTooLarge:
            events = failed_call(too_large(self._max_request_bytes))
        except ClientGone:
            return
        else:
            events = self._events(method, path, protocol, headers, body, client)
        responding = asyncio.ensure_future(
            protocol.respond(send, method or unknown_placeholder(path), events)
        )
        watching = asyncio.ensure_future(_until_disconnected(receive))
        try:
            await asyncio.wait({responding, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            if not responding.done():
                responding.cancel()  # the client went away: end the forwarded call
            await asyncio.gather(responding, watching, return_exceptions=True)
        error = None if responding.cancelled() else responding.exception()
        if error is not None:
            raise error

    def _events(
        self,
        method: WebMethod | None,
        path: str,
        protocol: WireProtocol,
        headers: Headers,
        body: bytes,
        client: str,
    ) -> AsyncIterator[CallEvent]:
        if method is None:
            return failed_call(unknown_method(path))
        if method.client_streaming:
            return failed_call(streamed_request(method))
        try:
            request = protocol.request_message(method, body)
        except MnemoError as error:
            return failed_call(error)
        metadata = (*forwarded_metadata(headers), (WEB_PEER_KEY, client))
        return self._forwarder.call(path, request, metadata, protocol.timeout(headers))


def unknown_placeholder(path: str) -> WebMethod:
    """Stands for an unknown method in ``respond`` (its call fails before any message)."""
    return WebMethod(path, empty_pb2.Empty, empty_pb2.Empty, False, False)


def misdirected(host: str | None) -> str:
    """The 421 answer to a request whose ``Host`` does not name this port."""
    named = "no Host header" if host is None else f"Host {host!r}"
    return (
        f"{named} is not a name of this server; call it by its listening address, or add "
        "the name a proxy or browser uses to --web-allowed-hosts"
    )


def _with_headers(send: Send, extra: Headers) -> Send:
    """``send`` adding ``extra`` to the response start."""

    async def sending(message: AsgiMessage) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
