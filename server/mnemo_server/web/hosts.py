"""The names the web port answers to, against DNS rebinding.

A web page whose name an attacker rebinds to 127.0.0.1 reaches the web port
with its own name in ``Host`` (and in ``Origin``). So the port serves only
requests whose ``Host`` is one of its names (``HostPolicy.allows``), and a
request is same-origin (the console's calls, exempt from CORS) only when its
``Origin`` names one of them too (``HostPolicy.is_own_origin``) — never
because ``Origin`` matches the request's own ``Host``.

Its names:

- the address it listens on, with its port: ``127.0.0.1:8091``, ``[::1]:8091``;
  on a loopback address also ``localhost:8091``;
- on a wildcard address (``0.0.0.0``, ``::``): any IP literal with its port
  (an IP literal cannot be rebound: a page there is served by this port), and
  ``localhost`` and this machine's host name with its port;
- each ``--web-allowed-hosts`` entry: ``name`` with any port (a proxy's public
  name, whatever port the proxy listens on) or ``name:port`` with that one.

A ``Host`` without a port means the scheme's default port (80 or 443).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Authority:
    """A host name (lower case, IPv6 without brackets) and a port."""

    host: str
    port: int | None

    @classmethod
    def parse(cls, text: str, default_port: int | None) -> Authority | None:
        """``host``, ``host:port``, ``[v6]`` or ``[v6]:port``; ``None`` if malformed."""
        text = text.strip().lower()
        if text.startswith("["):
            host, bracket, rest = text[1:].partition("]")
            if not bracket or (rest and not rest.startswith(":")):
                return None
            port_text = rest[1:] if rest else ""
        else:
            host, colon, port_text = text.partition(":")
            if colon and not port_text:
                return None
        host = host.rstrip(".")
        if not host:
            return None
        if not port_text:
            return cls(host, default_port)
        if not port_text.isdigit() or int(port_text) > 65535:
            return None
        return cls(host, int(port_text))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class HostPolicy:
    """Which ``Host`` and ``Origin`` values name the web port (module docstring)."""

    def __init__(self, bound_host: str, port: int, scheme: str, allowed: Iterable[str]) -> None:
        self._port = port
        self._scheme = scheme
        host = bound_host.strip("[]").lower()
        self._any_ip = host in ("", "0.0.0.0", "::")
        names = {host}
        if (
            host == "localhost"
            or self._any_ip
            or (_is_ip(host) and ipaddress.ip_address(host).is_loopback)
        ):
            names.add("localhost")
        if self._any_ip:
            names.update({socket.gethostname().lower(), socket.getfqdn().lower()})
        self._own_names = frozenset(names)
        configured: set[tuple[str, int | None]] = set()
        for entry in allowed:
            parsed = Authority.parse(entry, None)
            if parsed is not None:
                configured.add((parsed.host, parsed.port))
        self._configured = frozenset(configured)

    def allows(self, host_header: str | None) -> bool:
        """Whether a request with this ``Host`` header is addressed to this port."""
        if host_header is None:
            return False
        found = Authority.parse(host_header, _DEFAULT_PORTS[self._scheme])
        return found is not None and self._names(found)

    def is_own_origin(self, origin: str) -> bool:
        """Whether a page of ``origin`` is served by this port (same-origin)."""
        parts = urlsplit(origin)
        if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or parts.path not in ("", "/"):
            return False
        found = Authority.parse(parts.netloc, _DEFAULT_PORTS[parts.scheme])
        if found is None:
            return False
        if self._configured_name(found):
            return True  # a proxy's name: it may terminate TLS, either scheme
        return parts.scheme == self._scheme and self._listening_name(found)

    def _names(self, found: Authority) -> bool:
        return self._listening_name(found) or self._configured_name(found)

    def _listening_name(self, found: Authority) -> bool:
        if found.port != self._port:
            return False
        return found.host in self._own_names or (self._any_ip and _is_ip(found.host))

    def _configured_name(self, found: Authority) -> bool:
        return (found.host, None) in self._configured or (
            found.host,
            found.port,
        ) in self._configured
