"""Who is calling: the verified identity that every command carries."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Caller", "tenant_of_new_users"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a verified credential says is calling.

    ``user_id`` is the token's ``sub``; ``tenant_id`` its tenant claim (``""``
    without one); ``admin`` whether it carries the admin role, which lets it act
    for any user of its own tenant. Under ``--auth none`` there is no caller
    (``None``): no identity, so no isolation either.
    """

    user_id: str
    tenant_id: str = ""
    admin: bool = False


def tenant_of_new_users(caller: Caller | None) -> str:
    """The tenant a user created implicitly by ``caller``'s write belongs to."""
    return "" if caller is None else caller.tenant_id
