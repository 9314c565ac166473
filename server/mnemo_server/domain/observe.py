"""What the store, the change feed and the admission report as they work: the
observer port (``Observer``) and its no-op default (``NO_OBSERVER``).

The layers that do the work call these plain callbacks; they never import a
metrics or tracing library. The app plugs in an implementation
(``mnemo_server.observability``: Prometheus metrics, OpenTelemetry spans)
when ``--metrics-listen`` or ``--tracing`` is set, otherwise the no-op one,
so an unobserved server pays one method call per report.

Every callback must be cheap and must not raise: the store calls them on
its lane threads, between a commit and the answers to the callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["NO_OBSERVER", "NoObserver", "Observer", "Transaction", "TransactionKind"]

TransactionKind = Literal["read", "write"]


@dataclass(frozen=True, slots=True)
class Transaction:
    """A store transaction that ended (committed, or rolled back: a read, a
    write whose only operation failed or is retried): ``started_ns`` and ``ended_ns`` as ``time.time_ns()``; ``queued``:
    what ``Observer.queued`` returned for each operation it ran (its length
    is the batch size)."""

    kind: TransactionKind
    started_ns: int
    ended_ns: int
    queued: Sequence[object]

    @property
    def seconds(self) -> float:
        return max(self.ended_ns - self.started_ns, 0) / 1e9


class Observer(Protocol):
    """Callbacks of the work the server does (see the module docstring)."""

    def queued(self) -> object:
        """An operation is queued for the store, on the caller's thread: what
        the observer wants back with its transaction (the caller's trace
        context; ``None`` when it wants nothing)."""
        ...

    def transaction(self, done: Transaction) -> None:
        """A transaction ended."""
        ...

    def retried(self, kind: TransactionKind, cause: str) -> None:
        """An operation (or a whole batch) failed for a retryable ``cause``
        (a short, bounded name: ``store.engine.failures.retry_cause``) and
        runs again."""
        ...

    def rate_limited(self) -> None:
        """A call was refused by the per-user rate limit."""
        ...

    def change_delivered(self, lag_seconds: float) -> None:
        """A live change watch handed a change to its stream ``lag_seconds``
        after the change's time (``domain.change_watch``)."""
        ...

    def embedded(self, entries: int, seconds: float, backlog: int) -> None:
        """The background embedder stored the vectors of ``entries`` entries,
        computed in ``seconds``; ``backlog`` entries wait now (as last
        counted)."""
        ...

    def embedding_failed(self, texts: int) -> None:
        """The embedder failed on a batch of ``texts`` texts (to be retried)."""
        ...

    def vectors_skipped(self, vectors: int) -> None:
        """A read met ``vectors`` stored vectors it cannot use (wrong length,
        not finite, all zeros) and left them out; each is reported once per
        process."""
        ...


class NoObserver:
    """Observes nothing (the default)."""

    def queued(self) -> object:
        return None

    def transaction(self, done: Transaction) -> None:
        return None

    def retried(self, kind: TransactionKind, cause: str) -> None:
        return None

    def rate_limited(self) -> None:
        return None

    def change_delivered(self, lag_seconds: float) -> None:
        return None

    def embedded(self, entries: int, seconds: float, backlog: int) -> None:
        return None

    def embedding_failed(self, texts: int) -> None:
        return None

    def vectors_skipped(self, vectors: int) -> None:
        return None


NO_OBSERVER: Observer = NoObserver()
