"""Recall relevance on the hand-written set (memories.json, queries.json;
docs/relevance.md) through a real server with the default (local) embedder, on
both backends:

- the overall recall@5 and nDCG@10, lexical and semantic, must not drop below
  thresholds.json, the figures of the ranking when they were recorded, rounded
  down to 3 decimals. A change that raises a figure should raise its threshold
  too: ``make relevance ARGS="--thresholds tests/relevance/thresholds.json"``
  records the figures of the working tree;
- no query, in either mode, may return a forbidden entry (archived, deleted,
  out of scope, or found by its previous text);
- SQLite and PostgreSQL return the same entries in the same order for every
  query and mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mnemo.client import MnemoClient
from tests.support.databases import PostgresDatabases, SqliteDatabases
from tests.support.embedding import wait_until_embedded
from tests.support.relevance import (
    Rankings,
    RelevanceSet,
    below_thresholds,
    ranked_names,
    read_set,
    run_queries,
    save_set,
    score,
)
from tests.support.server import running_server

BACKENDS = ("sqlite", "postgres")


@pytest.fixture(scope="module")
def relevance_set() -> RelevanceSet:
    return read_set()


@pytest.fixture(scope="module")
def rankings_by_backend() -> dict[str, Rankings]:
    """What each backend's run returned, for the comparison at the end."""
    return {}


def measure(database_url: str, relevance_set: RelevanceSet) -> Rankings:
    """Save the set into a fresh server over ``database_url``, wait for the
    background embedder, and run every query."""
    with running_server(database_url, embedder="local") as target:
        with MnemoClient(target) as client:
            save_set(client, relevance_set)
            wait_until_embedded(database_url)
            return run_queries(client, relevance_set)


def test_recall_keeps_its_recorded_figures_and_never_returns_a_forbidden_entry(
    backend: str,
    database_url: str,
    relevance_set: RelevanceSet,
    rankings_by_backend: dict[str, Rankings],
) -> None:
    rankings = measure(database_url, relevance_set)
    rankings_by_backend[backend] = rankings
    report = score(relevance_set, rankings)

    forbidden = [
        f"{hit.mode} {hit.query_id} #{hit.rank}: {hit.name} ({hit.reason})"
        for hit in report.forbidden_hits()
    ]
    assert not forbidden, "recall returned entries it must never return:\n" + "\n".join(forbidden)
    below = below_thresholds(report)
    assert not below, (
        "recall got worse than tests/relevance/thresholds.json records:\n"
        + "\n".join(below)
        + "\n(`make relevance` shows the figures per tag and the worst queries)"
    )


@contextmanager
def _fresh_database(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        sqlite: SqliteDatabases = request.getfixturevalue("sqlite_databases")
        yield sqlite.fresh(tmp_path)
        return
    postgres: PostgresDatabases = request.getfixturevalue("postgres_databases")
    url = postgres.fresh()
    try:
        yield url
    finally:
        postgres.drop(url)


@pytest.mark.sqlite
@pytest.mark.postgres
def test_both_backends_rank_every_query_identically(
    relevance_set: RelevanceSet,
    rankings_by_backend: dict[str, Rankings],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    for backend in BACKENDS:
        if backend not in rankings_by_backend:  # its test was not selected
            with _fresh_database(backend, request, tmp_path) as url:
                rankings_by_backend[backend] = measure(url, relevance_set)
    sqlite, postgres = (ranked_names(rankings_by_backend[b]) for b in BACKENDS)
    differing = [
        f"{call}:\n  sqlite   {sqlite[call]}\n  postgres {postgres[call]}"
        for call in sqlite
        if sqlite[call] != postgres[call]
    ]
    assert not differing, "the backends rank differently:\n" + "\n".join(differing)
