"""Whom an MCP server acts for: one user, named by a flag or by the ``sub``
claim of the bearer token it sends.

The token is only read here, never verified: the Mnemo server verifies it on
every call and refuses a call for another user than the token's
(``NOT_FOUND``), unless the token carries the admin role of the user's tenant.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class IdentityError(ValueError):
    """No user could be told from the flags and token given."""


@dataclass(frozen=True)
class Identity:
    """The user the tools act for, and optionally the conversation they act in.

    ``conversation`` (an id) is where the tools' writes come from
    (``origin_conversation``: a temporary conversation refuses them), what
    ``scope="conversation"`` saves into, what recall and context also search,
    and whose working memory the ``working_memory_*`` tools use; ``None``: no
    conversation (identity-wide entries, the user's default working memory).
    """

    user: str
    conversation: str | None = None


def token_subject(token: str) -> str:
    """The ``sub`` claim of a JWT, read without verifying it.

    Raises:
        IdentityError: not a JWT, or no string ``sub`` in it.
    """
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise IdentityError("the token is not a JWT (three dot-separated parts)")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError) as error:
        raise IdentityError(f"the token's payload is not base64url JSON ({error})") from None
    subject = claims.get("sub") if isinstance(claims, dict) else None
    if not isinstance(subject, str) or not subject:
        raise IdentityError("the token has no 'sub' claim naming the user")
    return subject


def token_file_reader(path: Path) -> Callable[[], str]:
    """A token source that reads ``path`` before every call, so a token that
    another process refreshes in place is picked up (surrounding whitespace
    is dropped)."""

    def read() -> str:
        return path.read_text(encoding="utf-8").strip()

    return read


def resolve_identity(
    user: str | None, token: str | None, conversation: str | None = None
) -> Identity:
    """The identity from ``--user`` and the token: the user given, else the token's ``sub``.

    Raises:
        IdentityError: neither is given, or the token names no user.
    """
    if user:
        return Identity(user, conversation or None)
    if not token:
        raise IdentityError("give --user (servers with --auth none) or a token (--auth jwt)")
    return Identity(token_subject(token), conversation or None)
