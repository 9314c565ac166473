"""Length-prefixed frames: gRPC-Web's and Connect streaming's shared envelope.

One frame is a flags byte, a 4-byte big-endian length and that many bytes.
"""

from __future__ import annotations

import struct

from mnemo_server.domain.errors import InvalidArgument
from mnemo_server.rpc.errors import undecodable_request

_PREFIX = struct.Struct(">BI")
PREFIX_BYTES = _PREFIX.size
COMPRESSED = 0x01


def frame(flags: int, data: bytes) -> bytes:
    return _PREFIX.pack(flags, len(data)) + data


def single_message(body: bytes, path: str) -> bytes:
    """The one uncompressed message framed in a request ``body``.

    Raises ``InvalidArgument`` (field ``request``) for a body that is not
    exactly one uncompressed frame.
    """
    if len(body) < PREFIX_BYTES:
        raise undecodable_request(path, "the body is not a length-prefixed message")
    flags, length = _PREFIX.unpack_from(body)
    if flags & COMPRESSED:
        raise compressed_request(path)
    if len(body) != PREFIX_BYTES + length:
        raise undecodable_request(
            path, "the body must hold exactly one length-prefixed message (unary request)"
        )
    return body[PREFIX_BYTES:]


def compressed_request(path: str) -> InvalidArgument:
    return undecodable_request(path, "compressed messages are not accepted: send identity")
