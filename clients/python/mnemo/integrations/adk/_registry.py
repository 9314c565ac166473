"""``mnemo://host:port`` for ADK's service registry (``adk web``, ``adk api_server``...).

``register()`` adds the ``mnemo`` scheme for session and memory services to
``google.adk.cli.service_registry.get_service_registry()``; call it from the
agents directory's ``services.py``, or name the classes in its
``services.yaml`` (both take ``uri=``). ``adk web --session_service_uri
mnemo://localhost:50051 --memory_service_uri mnemo://localhost:50051`` then
uses Mnemo. The bearer token, when the server wants one, comes from the
``MNEMO_TOKEN`` environment variable.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

SCHEME = "mnemo"
TOKEN_VARIABLE = "MNEMO_TOKEN"


def target_of(uri: str) -> str:
    """``host:port`` of a ``mnemo://host:port`` URI.

    Raises:
        ValueError: another scheme, or no host and port.
    """
    parsed = urlparse(uri)
    if parsed.scheme != SCHEME or not parsed.hostname or parsed.port is None:
        raise ValueError(f"expected a {SCHEME}://host:port URI, got {uri!r:.120}")
    host = parsed.hostname
    if ":" in host:  # an IPv6 address, written [::1] in a target
        host = f"[{host}]"
    return f"{host}:{parsed.port}"


def token_from_environment() -> str | None:
    """``$MNEMO_TOKEN``, or ``None`` when unset or empty."""
    return os.environ.get(TOKEN_VARIABLE) or None


def _session_factory(uri: str, **kwargs: Any) -> Any:
    from mnemo.integrations.adk._sessions import MnemoSessionService

    return MnemoSessionService(uri=uri, **kwargs)


def _memory_factory(uri: str, **kwargs: Any) -> Any:
    from mnemo.integrations.adk._memory import MnemoMemoryService

    return MnemoMemoryService(uri=uri, **kwargs)


def register() -> None:
    """Register ``mnemo://`` for ADK's session and memory service URIs (idempotent)."""
    from google.adk.cli.service_registry import get_service_registry

    registry = get_service_registry()
    registry.register_session_service(SCHEME, _session_factory)
    registry.register_memory_service(SCHEME, _memory_factory)
