"""The ``AsyncMnemoClient`` a service uses: given, or opened on first use."""

from __future__ import annotations

from typing import Any

from mnemo.client import AsyncMnemoClient
from mnemo.integrations.adk._registry import target_of, token_from_environment

#: Keyword arguments ADK's registry passes that are not ours.
_REGISTRY_ONLY = ("agents_dir", "per_agent")


class ClientHolder:
    """Opens the client lazily, inside the event loop that first uses it
    (a ``grpc.aio`` channel belongs to one loop)."""

    def __init__(
        self,
        target: str | None,
        *,
        uri: str | None,
        client: AsyncMnemoClient | None,
        token: str | None,
        options: dict[str, Any],
    ) -> None:
        for name in _REGISTRY_ONLY:
            options.pop(name, None)
        if client is not None and (target or uri):
            raise ValueError("pass a client or a target/uri, not both")
        if target is None and uri is not None:
            target = target_of(uri)
            token = token or token_from_environment()
        if client is None and target is None:
            raise ValueError("a target (host:port), a mnemo:// uri or a client is required")
        self._client = client
        self._owned = client is None
        self._target = target
        self._token = token
        self._options = options

    def get(self) -> AsyncMnemoClient:
        if self._client is None:
            assert self._target is not None
            self._client = AsyncMnemoClient(self._target, token=self._token, **self._options)
        return self._client

    async def close(self) -> None:
        """Close the client if this holder opened it."""
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            await client.close()
