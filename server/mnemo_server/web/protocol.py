"""What the gRPC-Web and Connect protocols have in common (``WireProtocol``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from mnemo_server.web.forward import CallEnded, CallEvent, InitialMetadata, ResponseMessage
from mnemo_server.web.metadata import Headers, Outcome, as_headers
from mnemo_server.web.methods import WebMethod

AsgiMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]


class WireProtocol(Protocol):
    """One protocol with one codec, chosen by the request's content type."""

    def request_message(self, method: WebMethod, body: bytes) -> bytes:
        """The binary request message in ``body``. Raises ``MnemoError``
        (``InvalidArgument``, ``NotImplementedYet``) for a request it cannot carry."""
        ...

    def timeout(self, headers: Headers) -> float | None:
        """The call's deadline in seconds, from the protocol's timeout header."""
        ...

    def body_limit(self, max_message_bytes: int) -> int:
        """Largest request body that can carry a message of ``max_message_bytes``."""
        ...

    async def respond(
        self, send: Send, method: WebMethod, events: AsyncIterator[CallEvent]
    ) -> None:
        """Send the HTTP response for the call's ``events``."""
        ...


async def start_response(send: Send, status: int, headers: Headers) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})


async def send_body(send: Send, data: bytes, *, more: bool) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


class Enveloped:
    """``respond`` of the streamed protocols (gRPC-Web, Connect streaming): HTTP 200
    with the initial metadata as headers, ``message_envelope`` per response message
    as it arrives, then ``end_envelope``."""

    @property
    def content_type(self) -> bytes:
        raise NotImplementedError

    def message_envelope(self, method: WebMethod, data: bytes) -> bytes:
        """The envelope of one binary response message."""
        raise NotImplementedError

    def end_envelope(self, outcome: Outcome) -> bytes:
        """The last envelope: the call's status and trailing metadata."""
        raise NotImplementedError

    async def respond(
        self, send: Send, method: WebMethod, events: AsyncIterator[CallEvent]
    ) -> None:
        async for event in events:
            if isinstance(event, InitialMetadata):
                headers = [(b"content-type", self.content_type), *as_headers(event.metadata)]
                await start_response(send, 200, headers)
            elif isinstance(event, ResponseMessage):
                await send_body(send, self.message_envelope(method, event.data), more=True)
            elif isinstance(event, CallEnded):
                await send_body(send, self.end_envelope(event.outcome), more=False)
