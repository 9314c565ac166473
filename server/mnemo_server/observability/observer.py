"""Several ``domain.observe.Observer``s as one (metrics and tracing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mnemo_server.domain.observe import NO_OBSERVER, Observer, Transaction, TransactionKind

__all__ = ["combined"]


class _Both:
    """Reports to two observers; ``queued`` keeps what each wants back."""

    def __init__(self, first: Observer, second: Observer) -> None:
        self._first = first
        self._second = second

    def queued(self) -> object:
        return (self._first.queued(), self._second.queued())

    def transaction(self, done: Transaction) -> None:
        pairs: list[tuple[object, object]] = [
            item if isinstance(item, tuple) else (None, None) for item in done.queued
        ]
        self._first.transaction(replace(done, queued=[first for first, _ in pairs]))
        self._second.transaction(replace(done, queued=[second for _, second in pairs]))

    def retried(self, kind: TransactionKind, cause: str) -> None:
        self._first.retried(kind, cause)
        self._second.retried(kind, cause)

    def rate_limited(self) -> None:
        self._first.rate_limited()
        self._second.rate_limited()

    def change_delivered(self, lag_seconds: float) -> None:
        self._first.change_delivered(lag_seconds)
        self._second.change_delivered(lag_seconds)

    def embedded(self, entries: int, seconds: float, backlog: int) -> None:
        self._first.embedded(entries, seconds, backlog)
        self._second.embedded(entries, seconds, backlog)

    def embedding_failed(self, texts: int) -> None:
        self._first.embedding_failed(texts)
        self._second.embedding_failed(texts)

    def vectors_skipped(self, vectors: int) -> None:
        self._first.vectors_skipped(vectors)
        self._second.vectors_skipped(vectors)


def combined(observers: Sequence[Observer | None]) -> Observer:
    """One observer reporting to each of ``observers`` (``None``s left out);
    the no-op one for none."""
    present = [observer for observer in observers if observer is not None]
    if not present:
        return NO_OBSERVER
    result = present[0]
    for observer in present[1:]:
        result = _Both(result, observer)
    return result
