"""An embedder (``--embedder tests.support.leaky_embedder:LeakyEmbedder``)
whose every failure message carries a credential, as a careless provider
client's exceptions do: what the server must keep out of its log and its
answers (``tests/security/test_embedding_provider.py``)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LEAKED", "LeakyEmbedder"]

LEAKED = "sk-proj-7hT9qLmW2xVbN4cZ8rKd"
"""The credential its failures print."""


class LeakyEmbedder:
    @property
    def model(self) -> str:
        return "leaky-4"

    @property
    def dimensions(self) -> int:
        return 4

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        raise RuntimeError(
            f"upstream refused {len(texts)} texts; request headers were "
            f"{{'Authorization': 'Bearer {LEAKED}', 'api-key': '{LEAKED}'}}"
        )
