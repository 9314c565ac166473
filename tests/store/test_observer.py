"""What the transaction helper reports to its observer (``domain.observe``),
through the Prometheus implementation (``observability.metrics``), on every
backend: each transaction with its kind and batch size, and each retry
with its cause."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from mnemo_server.observability.metrics import Metrics
from mnemo_server.store.transactions.database import Database, RetryTransaction, Tx, open_database
from tests.store.test_database import add_user, held_batch, user_ids


@pytest.fixture
def observed(
    database_url: str, event_loop: asyncio.AbstractEventLoop
) -> Iterator[tuple[Database, Metrics]]:
    metrics = Metrics()
    database = open_database(database_url, observer=metrics)
    try:
        yield database, metrics
    finally:
        event_loop.run_until_complete(database.close())


def _sample(metrics: Metrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


async def test_transactions_batches_and_retries_are_reported(
    observed: tuple[Database, Metrics],
) -> None:
    database, metrics = observed
    attempts: list[int] = []

    def twice_retried(tx: Tx) -> int:
        attempts.append(1)
        if len(attempts) < 3:
            raise RetryTransaction("lost a race")
        return len(attempts)

    assert await database.write(twice_retried) == (3, 0)
    count = "mnemo_store_transaction_duration_seconds_count"
    assert _sample(metrics, "mnemo_store_retries_total", kind="write", cause="requested") == 2
    assert _sample(metrics, count, kind="write") == 3  # two rolled back, one committed

    outcomes = await held_batch(database, add_user("a"), add_user("b"), add_user("c"))
    assert outcomes == [("a", 0), ("b", 0), ("c", 0)]
    # The gate's write alone, then the three in one transaction.
    assert _sample(metrics, count, kind="write") == 5
    batches = "mnemo_store_batch_operations_bucket"
    assert _sample(metrics, batches, kind="write", le="2.0") == 4
    assert _sample(metrics, batches, kind="write", le="4.0") == 5
    assert _sample(metrics, "mnemo_store_batch_operations_sum", kind="write") == 4 + 3

    assert await database.read(user_ids) == ["a", "b", "c"]
    assert _sample(metrics, count, kind="read") == 1
    assert _sample(metrics, "mnemo_store_batch_operations_sum", kind="read") == 1
    size, checked_out = database.pool_usage()
    assert size == 2 + 1 + 1 and 0 <= checked_out <= size
