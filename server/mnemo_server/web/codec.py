"""Message codecs of the web port: binary protobuf (passed through) and proto3 JSON.

The gRPC port only speaks binary protobuf, so a JSON request is parsed with
``google.protobuf.json_format`` into the method's request message and
serialized, and each response is turned back into JSON. Binary requests are
forwarded untouched: the gRPC server decodes (and rejects) them itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import json_format

from mnemo_server.rpc.errors import undecodable_request
from mnemo_server.web.methods import WebMethod


@dataclass(frozen=True)
class Codec:
    """``proto`` or ``json``: how messages are spelled on the web port."""

    name: str

    @property
    def is_json(self) -> bool:
        return self.name == "json"

    def request_bytes(self, method: WebMethod, body: bytes) -> bytes:
        """The binary request message for ``body``.

        Raises ``InvalidArgument`` (reason ``INVALID_FIELD``, field ``request``)
        for JSON that is not a valid request message.
        """
        if not self.is_json:
            return body
        message = method.request_class()
        try:
            json_format.Parse(body.decode("utf-8"), message, ignore_unknown_fields=True)
        except (json_format.ParseError, UnicodeDecodeError) as error:
            raise undecodable_request(method.path, str(error)) from None
        result: bytes = message.SerializeToString()
        return result

    def response_bytes(self, method: WebMethod, data: bytes) -> bytes:
        """``data`` (a binary response message) spelled in this codec.

        Raises ``google.protobuf.message.DecodeError`` only if the gRPC port
        sent something that is not the method's response message (a bug).
        """
        if not self.is_json:
            return data
        message = method.response_class.FromString(data)
        return json_format.MessageToJson(message, indent=None).encode()


PROTO = Codec("proto")
JSON = Codec("json")
