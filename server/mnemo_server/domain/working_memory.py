"""Working-memory policy: the recent-exchange window and the summary budget."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_server.domain.errors import FieldViolation, InvalidArgument
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


def check_summary_budget(summary: str, max_words: int, *, field: str) -> None:
    """Raise ``InvalidArgument(reason="SUMMARY_OVER_BUDGET")`` if over budget.

    The summary is never truncated: the scribe that wrote it must shorten it.
    """
    words = count_words(summary)
    if words > max_words:
        raise InvalidArgument(
            f"{field} has {words} words; the budget is {max_words}: shorten the summary",
            reason="SUMMARY_OVER_BUDGET",
            metadata={"max_words": str(max_words), "words": str(words)},
            violations=(FieldViolation(field, f"at most {max_words} words (got {words})"),),
        )
