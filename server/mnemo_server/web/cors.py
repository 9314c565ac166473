"""CORS of the web port (``--web-cors-origins``).

A request carrying an ``Origin`` header is served only if that origin is
listed (or the list is ``*``); its response then names the origin in
``Access-Control-Allow-Origin`` and exposes the gRPC-Web and Connect status
headers. A preflight (``OPTIONS`` with ``Access-Control-Request-Method``) from
a listed origin is answered 204 allowing ``POST`` and the requested headers;
from any other origin 403. Requests without ``Origin`` (not from a browser
page) are not subject to CORS. Cookies are never used, so credentials are
never allowed.
"""

from __future__ import annotations

from collections.abc import Iterable

from mnemo_server.web.metadata import Headers

EXPOSED_HEADERS = (
    b"grpc-status, grpc-message, grpc-status-details-bin, grpc-encoding, "
    b"connect-content-encoding, connect-accept-encoding, content-encoding"
)
# Asked for when a preflight names no headers: what the Connect and gRPC-Web clients send.
DEFAULT_ALLOWED_HEADERS = (
    b"content-type, authorization, connect-protocol-version, connect-timeout-ms, "
    b"grpc-timeout, x-grpc-web, x-user-agent"
)
PREFLIGHT_MAX_AGE_SECONDS = b"7200"


class CorsPolicy:
    """Which page origins may call the web port."""

    def __init__(self, origins: Iterable[str]) -> None:
        self._origins = frozenset(origin.rstrip("/") for origin in origins)
        self._any = "*" in self._origins

    def allows(self, origin: str) -> bool:
        return self._any or origin.rstrip("/") in self._origins

    def response_headers(self, origin: str) -> Headers:
        """Headers of an actual response to a request from allowed ``origin``."""
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", EXPOSED_HEADERS),
            (b"vary", b"Origin"),
        ]

    def preflight_headers(self, origin: str, requested_headers: str | None) -> Headers:
        """Headers of the 204 answering a preflight from allowed ``origin``."""
        allowed = requested_headers.encode("latin-1") if requested_headers else None
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-allow-methods", b"POST"),
            (b"access-control-allow-headers", allowed or DEFAULT_ALLOWED_HEADERS),
            (b"access-control-max-age", PREFLIGHT_MAX_AGE_SECONDS),
            (b"vary", b"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"),
        ]
