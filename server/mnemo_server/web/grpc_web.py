"""gRPC-Web: the gRPC framing over HTTP/1.1, trailers as the last frame of the body.

Every response is HTTP 200 with the call's initial metadata as headers, one
frame per message (sent as soon as it arrives) and a trailer frame (flag
0x80) holding ``grpc-status``, ``grpc-message`` and the trailing metadata,
``grpc-status-details-bin`` (the ``google.rpc.Status`` with ``ErrorInfo`` and
``BadRequest``) included. The ``-text`` variants base64 the request body and
each response frame.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from urllib.parse import quote

from mnemo_server.rpc.errors import undecodable_request
from mnemo_server.web.codec import JSON, PROTO, Codec
from mnemo_server.web.envelope import PREFIX_BYTES, frame, single_message
from mnemo_server.web.metadata import Headers, Outcome, as_headers, grpc_timeout, header
from mnemo_server.web.methods import WebMethod
from mnemo_server.web.protocol import Enveloped

TRAILERS = 0x80


@dataclass(frozen=True)
class GrpcWeb(Enveloped):
    """gRPC-Web with one codec, binary or ``-text`` (base64)."""

    codec: Codec
    text: bool

    @property
    def content_type(self) -> bytes:
        base = "application/grpc-web-text" if self.text else "application/grpc-web"
        return f"{base}+{self.codec.name}".encode()

    def body_limit(self, max_message_bytes: int) -> int:
        # JSON spells bytes in base64 and escapes text: allow for the growth.
        message = max_message_bytes * 2 if self.codec.is_json else max_message_bytes
        limit = message + PREFIX_BYTES
        return (limit + 2) // 3 * 4 if self.text else limit

    def timeout(self, headers: Headers) -> float | None:
        return grpc_timeout(header(headers, b"grpc-timeout"))

    def request_message(self, method: WebMethod, body: bytes) -> bytes:
        if self.text:
            try:
                body = base64.b64decode(body, validate=True)
            except (binascii.Error, ValueError):
                raise undecodable_request(method.path, "the body is not base64") from None
        return self.codec.request_bytes(method, single_message(body, method.path))

    def _encoded(self, data: bytes) -> bytes:
        return base64.b64encode(data) if self.text else data

    def message_envelope(self, method: WebMethod, data: bytes) -> bytes:
        return self._encoded(frame(0, self.codec.response_bytes(method, data)))

    def end_envelope(self, outcome: Outcome) -> bytes:
        return self._encoded(frame(TRAILERS, trailer_block(outcome)))


def trailer_block(outcome: Outcome) -> bytes:
    """The trailers as HTTP/1 header lines: status, message, then the trailing metadata."""
    lines = [
        f"grpc-status: {outcome.code.value[0]}",
        f"grpc-message: {percent_encoded(outcome.message)}",
    ]
    lines += [
        f"{key.decode('latin-1')}: {value.decode('latin-1')}"
        for key, value in as_headers(outcome.trailing)
    ]
    return "".join(line + "\r\n" for line in lines).encode("latin-1")


def percent_encoded(message: str) -> str:
    """``grpc-message`` encoding: UTF-8, with bytes outside printable ASCII and ``%`` escaped."""
    return quote(message, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~", encoding="utf-8")


def grpc_web_for(content_type: str) -> GrpcWeb | None:
    """The gRPC-Web variant of a request content type (parameters ignored), or ``None``."""
    return _VARIANTS.get(content_type.split(";")[0].strip().lower())


_VARIANTS = {
    "application/grpc-web": GrpcWeb(PROTO, text=False),
    "application/grpc-web+proto": GrpcWeb(PROTO, text=False),
    "application/grpc-web+json": GrpcWeb(JSON, text=False),
    "application/grpc-web-text": GrpcWeb(PROTO, text=True),
    "application/grpc-web-text+proto": GrpcWeb(PROTO, text=True),
}
