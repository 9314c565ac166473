"""Working-memory policy: the recent-exchange window and the summary budget."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_server.domain.models import Exchange


def window(
    recent: Sequence[Exchange], exchange: Exchange, keep: int
) -> tuple[tuple[Exchange, ...], tuple[Exchange, ...]]:
    """Append ``exchange`` and keep the newest ``keep``.

    Returns ``(kept, evicted)``, both oldest first. ``keep`` must be >= 1.
    """
    combined = (*recent, exchange)
    cut = max(0, len(combined) - keep)
    return combined[cut:], combined[:cut]


def count_words(text: str) -> int:
    """Words as a reader counts them: runs of non-whitespace."""
    return len(text.split())
