"""Credentials out of text that may be logged: what an embedding provider
said, an exception's message, any log line (``lifecycle`` installs
``redact`` on every log handler).

``redact`` replaces each given secret wherever it appears, and anything
shaped like a credential whoever it belongs to: the value of an
``Authorization`` header or of a ``Bearer``/``Basic`` scheme, OpenAI-style
keys (``sk-...``), JWTs, and the value after ``api_key=``, ``token:``,
``password=`` and the like. It errs on the side of hiding: a log line that
loses a harmless token-like word is better than one that prints a key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["REDACTED", "redact"]

REDACTED = "[redacted]"

_SHAPES = re.compile(
    "|".join(
        (
            # An Authorization header's value, or a scheme and its credentials.
            r"(?<=authorization)(?P<header>[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+(?:\s+[^\s\"',;}]+)?",
            r"\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]+",
            # OpenAI-, Anthropic- and similar provider keys.
            r"\b(?:sk|pk|rk|sess)-[A-Za-z0-9_-]{8,}",
            # A JWT (three base64url parts, the first a JSON header).
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
            # key=value, key: value, "key": "value" for credential-like keys.
            r"(?<=api[-_]key)(?P<kv1>[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}&]+",
            r"(?<=token)(?P<kv2>[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}&]+",
            r"(?<=secret)(?P<kv3>[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}&]+",
            r"(?<=password)(?P<kv4>[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}&]+",
        )
    ),
    re.IGNORECASE,
)


def _replacement(match: re.Match[str]) -> str:
    separator = next((g for g in match.groups() if g is not None), "")
    return f"{separator}{REDACTED}"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every one of ``secrets`` (those of at least 4
    characters) and everything credential-shaped replaced by ``REDACTED``."""
    text = _SHAPES.sub(_replacement, text)
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text
