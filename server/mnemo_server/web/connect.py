"""The Connect protocol: unary requests as plain HTTP, server streams enveloped.

Unary (``application/proto``, ``application/json``): the body is the message;
success is HTTP 200 with the response message, the initial metadata as headers
and the trailing metadata as ``trailer-*`` headers; an error is the Connect
error JSON (``code``, ``message``, ``details`` with ``type`` and base64
``value``: the ``ErrorInfo``, ``BadRequest``... of ``grpc-status-details-bin``)
with the HTTP status Connect assigns to the code.

Streaming (``application/connect+proto``, ``application/connect+json``): one
enveloped request message; HTTP 200, one envelope per response message (sent
as it arrives) and an end-of-stream envelope (flag 0x02) with ``error`` (as
above, when the call failed) and ``metadata`` (the trailing metadata).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError
from google.rpc import status_pb2

from mnemo_server.domain.errors import NotImplementedYet
from mnemo_server.web.codec import JSON, PROTO, Codec
from mnemo_server.web.envelope import PREFIX_BYTES, frame, single_message
from mnemo_server.web.forward import CallEnded, CallEvent, InitialMetadata, ResponseMessage
from mnemo_server.web.metadata import (
    Headers,
    Metadata,
    Outcome,
    as_headers,
    connect_timeout,
    header,
    metadata_value_text,
)
from mnemo_server.web.methods import WebMethod
from mnemo_server.web.protocol import Enveloped, Send, send_body, start_response

END_STREAM = 0x02

# https://connectrpc.com/docs/protocol/#error-codes
_HTTP_STATUS = {
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}


def code_name(code: grpc.StatusCode) -> str:
    """Connect's name of a status code (``invalid_argument``; ``canceled`` with one l)."""
    return "canceled" if code is grpc.StatusCode.CANCELLED else code.name.lower()


def http_status(code: grpc.StatusCode) -> int:
    return _HTTP_STATUS.get(code, 500)


def error_json(outcome: Outcome) -> dict[str, Any]:
    """The Connect error object of a failed call."""
    error: dict[str, Any] = {"code": code_name(outcome.code)}
    if outcome.message:
        error["message"] = outcome.message
    details = _details(outcome.status_details)
    if details:
        error["details"] = details
    return error


def _details(status_bytes: bytes | None) -> list[dict[str, Any]]:
    if status_bytes is None:
        return []
    try:
        status = status_pb2.Status.FromString(status_bytes)
    except DecodeError:
        return []
    return [_detail(detail) for detail in status.details]


def _detail(detail: Any) -> dict[str, Any]:
    type_name = detail.TypeName()
    result: dict[str, Any] = {
        "type": type_name,
        "value": base64.b64encode(detail.value).decode().rstrip("="),
    }
    try:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(type_name)
        message = message_factory.GetMessageClass(descriptor)()
        message.ParseFromString(detail.value)
        result["debug"] = json_format.MessageToDict(message)
    except (KeyError, DecodeError):
        pass  # "debug" is optional: the type and value are what clients decode
    return result


def metadata_json(metadata: Metadata) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for key, value in metadata:
        result.setdefault(key, []).append(metadata_value_text(value))
    return result


@dataclass(frozen=True)
class ConnectUnary:
    codec: Codec

    @property
    def content_type(self) -> bytes:
        return b"application/json" if self.codec.is_json else b"application/proto"

    def body_limit(self, max_message_bytes: int) -> int:
        # JSON spells bytes in base64 and escapes text: allow for the growth.
        return max_message_bytes * 2 if self.codec.is_json else max_message_bytes

    def timeout(self, headers: Headers) -> float | None:
        return connect_timeout(header(headers, b"connect-timeout-ms"))

    def request_message(self, method: WebMethod, body: bytes) -> bytes:
        if method.server_streaming:
            raise NotImplementedYet(
                f"{method.path} streams its response: call it with the Connect streaming "
                "content types application/connect+proto or application/connect+json",
                metadata={"method": method.path},
                reason="NOT_IMPLEMENTED",
            )
        return self.codec.request_bytes(method, body)

    async def respond(
        self, send: Send, method: WebMethod, events: AsyncIterator[CallEvent]
    ) -> None:
        initial: Metadata = ()
        messages: list[bytes] = []
        outcome: Outcome | None = None
        async for event in events:
            if isinstance(event, InitialMetadata):
                initial = event.metadata
            elif isinstance(event, ResponseMessage):
                messages.append(event.data)
            elif isinstance(event, CallEnded):
                outcome = event.outcome
        assert outcome is not None, "a forwarded call always ends with CallEnded"
        headers = [*as_headers(initial), *as_headers(outcome.plain_trailing, "trailer-")]
        if outcome.ok and len(messages) == 1:
            body = self.codec.response_bytes(method, messages[0])
            await start_response(send, 200, [(b"content-type", self.content_type), *headers])
        else:
            if outcome.ok:  # a unary method that answered no message or several
                outcome = Outcome(grpc.StatusCode.INTERNAL, "unary call answered no message", ())
            body = json.dumps(error_json(outcome)).encode()
            status = http_status(outcome.code)
            await start_response(send, status, [(b"content-type", b"application/json"), *headers])
        await send_body(send, body, more=False)


@dataclass(frozen=True)
class ConnectStream(Enveloped):
    codec: Codec

    @property
    def content_type(self) -> bytes:
        return f"application/connect+{self.codec.name}".encode()

    def body_limit(self, max_message_bytes: int) -> int:
        limit = max_message_bytes * 2 if self.codec.is_json else max_message_bytes
        return limit + PREFIX_BYTES

    def timeout(self, headers: Headers) -> float | None:
        return connect_timeout(header(headers, b"connect-timeout-ms"))

    def request_message(self, method: WebMethod, body: bytes) -> bytes:
        return self.codec.request_bytes(method, single_message(body, method.path))

    def message_envelope(self, method: WebMethod, data: bytes) -> bytes:
        return frame(0, self.codec.response_bytes(method, data))

    def end_envelope(self, outcome: Outcome) -> bytes:
        """End of stream: the trailing metadata, and the error of a failed call."""
        end: dict[str, Any] = {"metadata": metadata_json(outcome.plain_trailing)}
        if not outcome.ok:
            end["error"] = error_json(outcome)
        return frame(END_STREAM, json.dumps(end).encode())


def connect_for(content_type: str) -> ConnectUnary | ConnectStream | None:
    """The Connect variant of a request content type (parameters ignored), or ``None``."""
    return _VARIANTS.get(content_type.split(";")[0].strip().lower())


_VARIANTS: dict[str, ConnectUnary | ConnectStream] = {
    "application/proto": ConnectUnary(PROTO),
    "application/json": ConnectUnary(JSON),
    "application/connect+proto": ConnectStream(PROTO),
    "application/connect+json": ConnectStream(JSON),
}
