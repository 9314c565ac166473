"""Prometheus metrics of one server (``--metrics-listen``), on a registry of its own.

Every metric and its labels (docs/operations.md, "Metrics, tracing and
logs"). Labels are bounded: a method's full name, a status code's name, a
transaction kind, a retry cause; never a user, a resource or a message.

- ``mnemo_rpc_handled_total{method,code}`` (counter): calls finished;
- ``mnemo_rpc_duration_seconds{method,code}`` (histogram): their durations;
- ``mnemo_rpc_in_flight{method}`` (gauge): calls running now;
- ``mnemo_store_transaction_duration_seconds{kind}`` (histogram): each
  store transaction, from its begin to its commit or rollback (``kind``
  read or write; a write that is retried counts each attempt);
- ``mnemo_store_batch_operations{kind}`` (histogram): operations per
  transaction (for writes, the group commit's batch size);
- ``mnemo_store_retries_total{kind,cause}`` (counter): operations or
  batches run again after a retryable failure;
- ``mnemo_rate_limited_total`` (counter): calls refused by the per-user
  rate limit;
- ``mnemo_watchers`` (gauge): change watches running now;
- ``mnemo_db_pool_connections`` and ``mnemo_db_pool_checked_out`` (gauges):
  the database connection pool's size and the connections in use;
- ``mnemo_change_feed_lag_seconds`` (histogram): from a change's time to
  its delivery to a live watch (``domain.change_watch``).

The store and the change feed report through the ``domain.observe.Observer``
callbacks this class implements; RPCs through ``rpc_child`` (the
interceptor, ``observability.interceptor``); the gauges of watchers and the
pool are read when scraped (``watch``, ``pool``), costing nothing per call.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mnemo_server.domain.observe import Transaction, TransactionKind

__all__ = ["Metrics", "RpcChildren"]

# Seconds: from a fraction of a millisecond (an empty call) to a long recall.
_RPC_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_TRANSACTION_BUCKETS = (0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0)


class RpcChildren:
    """The instruments of one (method, code), bound once and reused."""

    __slots__ = ("duration", "handled")

    def __init__(self, handled: Counter, duration: Histogram) -> None:
        self.handled = handled
        self.duration = duration

    def record(self, seconds: float) -> None:
        self.handled.inc()
        self.duration.observe(seconds)


class Metrics:
    """One server's metrics (see the module docstring); ``registry`` is what
    the metrics port serves."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._rpc_instruments(self.registry)
        self._store_instruments(self.registry)
        self._live_instruments(self.registry)
        self._embedding_instruments(self.registry)
        self._rpc_children: dict[tuple[str, str], RpcChildren] = {}
        self._flight_children: dict[str, Gauge] = {}
        self._kind_children: dict[TransactionKind, tuple[Histogram, Histogram]] = {}

    def _rpc_instruments(self, registry: CollectorRegistry) -> None:
        """``mnemo_rpc_*``."""
        self._handled = Counter(
            "mnemo_rpc_handled",
            "RPCs finished, by full method name and status code",
            ("method", "code"),
            registry=registry,
        )
        self._duration = Histogram(
            "mnemo_rpc_duration_seconds",
            "RPC durations from the handler's start to its end, by method and status code",
            ("method", "code"),
            buckets=_RPC_BUCKETS,
            registry=registry,
        )
        self._in_flight = Gauge(
            "mnemo_rpc_in_flight", "RPCs running now, by method", ("method",), registry=registry
        )

    def _store_instruments(self, registry: CollectorRegistry) -> None:
        """``mnemo_store_*``."""
        self._transaction = Histogram(
            "mnemo_store_transaction_duration_seconds",
            "Store transactions from begin to commit or rollback, by kind (read or write)",
            ("kind",),
            buckets=_TRANSACTION_BUCKETS,
            registry=registry,
        )
        self._batch = Histogram(
            "mnemo_store_batch_operations",
            "Operations per store transaction (writes: the group commit's batch)",
            ("kind",),
            buckets=_BATCH_BUCKETS,
            registry=registry,
        )
        self._retries = Counter(
            "mnemo_store_retries",
            "Store operations or batches run again after a retryable failure, by kind and cause",
            ("kind", "cause"),
            registry=registry,
        )

    def _live_instruments(self, registry: CollectorRegistry) -> None:
        """The rate limit's refusals, the watches, the pool and the feed's lag."""
        self._rate_limited = Counter(
            "mnemo_rate_limited", "Calls refused by the per-user rate limit", registry=registry
        )
        self._watchers = Gauge("mnemo_watchers", "Change watches running now", registry=registry)
        self._pool_size = Gauge(
            "mnemo_db_pool_connections",
            "Connections the database pool may hold",
            registry=registry,
        )
        self._pool_checked_out = Gauge(
            "mnemo_db_pool_checked_out",
            "Database connections checked out of the pool now",
            registry=registry,
        )
        self._lag = Histogram(
            "mnemo_change_feed_lag_seconds",
            "Seconds from a change's time to its delivery to a live change watch",
            buckets=_LAG_BUCKETS,
            registry=registry,
        )

    def _embedding_instruments(self, registry: CollectorRegistry) -> None:
        """The background embedder's and the vector reads' instruments."""
        self._embedded = Counter(
            "mnemo_embedded_entries",
            "Entries whose vectors the background embedder computed and stored",
            registry=registry,
        )
        self._embed_seconds = Histogram(
            "mnemo_embedding_batch_seconds",
            "Seconds the embedder took per batch of the background embedder",
            buckets=_LAG_BUCKETS,
            registry=registry,
        )
        self._embed_failures = Counter(
            "mnemo_embedding_failures",
            "Texts of batches the embedder failed on (retried, or dropped when it refuses one text)",
            registry=registry,
        )
        self._vectors_skipped = Counter(
            "mnemo_invalid_vectors_skipped",
            "Stored vectors a read skipped as invalid (wrong length, not finite, all zeros), "
            "each counted once per process",
            registry=registry,
        )
        self._backlog = Gauge(
            "mnemo_embedding_backlog",
            "Entries waiting for the background embedder, as last counted",
            registry=registry,
        )

    # ----------------------------------------------------------- RPCs

    def in_flight(self, method: str) -> Gauge:
        """The in-flight gauge of ``method`` (bound once)."""
        child = self._flight_children.get(method)
        if child is None:
            child = self._flight_children[method] = self._in_flight.labels(method)
        return child

    def rpc_children(self, method: str, code: str) -> RpcChildren:
        """The counter and histogram of ``method`` ending with ``code`` (bound once)."""
        key = (method, code)
        children = self._rpc_children.get(key)
        if children is None:
            children = RpcChildren(
                self._handled.labels(method, code), self._duration.labels(method, code)
            )
            self._rpc_children[key] = children
        return children

    # ------------------------------------------------- scrape-time gauges

    def watch(self, count: Callable[[], int]) -> None:
        """Read ``mnemo_watchers`` from ``count`` when scraped."""
        self._watchers.set_function(count)

    def pool(self, usage: Callable[[], tuple[int, int]]) -> None:
        """Read the pool gauges from ``usage`` (size, checked out) when scraped."""
        self._pool_size.set_function(lambda: usage()[0])
        self._pool_checked_out.set_function(lambda: usage()[1])

    # ------------------------------------------- domain.observe.Observer

    def queued(self) -> object:
        return None

    def transaction(self, done: Transaction) -> None:
        children = self._kind_children.get(done.kind)
        if children is None:
            children = (self._transaction.labels(done.kind), self._batch.labels(done.kind))
            self._kind_children[done.kind] = children
        children[0].observe(done.seconds)
        children[1].observe(len(done.queued))

    def retried(self, kind: TransactionKind, cause: str) -> None:
        self._retries.labels(kind, cause).inc()

    def rate_limited(self) -> None:
        self._rate_limited.inc()

    def change_delivered(self, lag_seconds: float) -> None:
        self._lag.observe(max(lag_seconds, 0.0))

    def embedded(self, entries: int, seconds: float, backlog: int) -> None:
        self._embedded.inc(entries)
        self._embed_seconds.observe(seconds)
        self._backlog.set(backlog)

    def embedding_failed(self, texts: int) -> None:
        self._embed_failures.inc(texts)

    def vectors_skipped(self, vectors: int) -> None:
        self._vectors_skipped.inc(vectors)
