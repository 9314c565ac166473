"""Mnemo sharded by user on a Citus cluster (``make test-citus`` only):
``mnemo migrate --distribute`` places every table as docs/operations.md
plans, does nothing the second time, refuses a table it does not know before
changing anything; a write's change notice reaches the coordinator's
listeners; a third worker takes shards by a rebalance and the data stays
readable and writable through the server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import grpc
import psycopg
import pytest

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, memories_pb2_grpc
from mnemo_server.store import distribute
from tests.api.memories import create, listed
from tests.support.citus import SHARD_COUNT, CitusCluster, CitusDatabases
from tests.support.mnemo_command import run_mnemo
from tests.support.pgcluster import libpq_url
from tests.support.server import running_server
from tests.support.shard_audit import PER_USER_TABLES, REFERENCE_TABLES

pytestmark = [pytest.mark.postgres, pytest.mark.citus]

NOTIFY_TIMEOUT_S = 60


@pytest.fixture
def citus_databases(postgres_databases: Any) -> CitusDatabases:
    assert isinstance(postgres_databases, CitusDatabases)
    return postgres_databases


@pytest.fixture
def distributed_url(citus_databases: CitusDatabases) -> Iterator[str]:
    url = citus_databases.fresh()
    try:
        yield url
    finally:
        citus_databases.drop(url)


@pytest.fixture
def empty_url(citus_databases: CitusDatabases) -> Iterator[str]:
    url = citus_databases.empty()
    try:
        yield url
    finally:
        citus_databases.drop(url)


def _distribute(url: str) -> subprocess.CompletedProcess[str]:
    """``mnemo migrate --distribute`` as an operator runs it, with the tests' shard count."""
    return run_mnemo(
        "migrate",
        "--distribute",
        "--database-url",
        url,
        env={"PGOPTIONS": f"-c citus.shard_count={SHARD_COUNT}"},
    )


def _query(url: str, statement: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(libpq_url(url)) as conn:
        return conn.execute(statement).fetchall()


def _placement(url: str) -> dict[str, tuple[str, str, int, int]]:
    """table -> (type, distribution column, co-location group, shard count)."""
    rows = _query(
        url,
        "SELECT table_name::text, citus_table_type, distribution_column, colocation_id, "
        "shard_count FROM citus_tables",
    )
    return {str(r[0]): (str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows}


def _assert_placed_as_planned(url: str) -> None:
    placed = _placement(url)
    assert distribute.REFERENCE_TABLES == REFERENCE_TABLES
    assert set(placed) == PER_USER_TABLES | REFERENCE_TABLES  # alembic_version stays local
    group = placed["users"][2]
    for table in PER_USER_TABLES:
        assert placed[table] == ("distributed", "user_id", group, SHARD_COUNT), table
    for table in REFERENCE_TABLES:
        assert placed[table][0] == "reference", table
    # The change feed's trigger is gone: writes notify on the coordinator.
    triggers = "SELECT tgname FROM pg_trigger WHERE tgrelid = 'change_cursors'::regclass"
    assert distribute.NOTIFY_TRIGGER not in {row[0] for row in _query(url, triggers)}


def test_every_table_is_placed_as_planned(distributed_url: str) -> None:
    _assert_placed_as_planned(distributed_url)


def test_a_second_run_changes_nothing(distributed_url: str) -> None:
    metadata = (
        "SELECT logicalrelid::text, partmethod, colocationid FROM pg_dist_partition ORDER BY 1"
    )
    shards = "SELECT shardid, logicalrelid::text FROM pg_dist_shard ORDER BY 1"
    before = (_query(distributed_url, metadata), _query(distributed_url, shards))

    done = run_mnemo("migrate", "--distribute", "--database-url", distributed_url)

    assert done.returncode == 0, done.stderr
    assert "is already distributed" in done.stdout
    assert (_query(distributed_url, metadata), _query(distributed_url, shards)) == before


def test_migrate_distribute_shards_a_new_database(empty_url: str) -> None:
    done = _distribute(empty_url)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("mnemo: reference tables now: app_states") for line in lines)
    assert any(line.startswith("mnemo: distributed by user_id now: users, ") for line in lines)
    _assert_placed_as_planned(empty_url)


def test_an_unknown_table_is_refused_before_anything_changes(empty_url: str) -> None:
    assert run_mnemo("migrate", "--database-url", empty_url).returncode == 0
    with psycopg.connect(libpq_url(empty_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (id bigint PRIMARY KEY, body text)")

    done = run_mnemo("migrate", "--distribute", "--database-url", empty_url)

    assert done.returncode == 1
    assert "notes has no user_id column" in done.stderr
    assert _query(empty_url, "SELECT count(*) FROM pg_dist_partition") == [(0,)]


def test_a_write_notifies_the_coordinators_listeners(distributed_url: str) -> None:
    with (
        psycopg.connect(libpq_url(distributed_url), autocommit=True) as listener,
        running_server(distributed_url) as target,
        grpc.insecure_channel(target) as channel,
    ):
        listener.execute("LISTEN mnemo_changes")
        conversations = conversations_pb2_grpc.ConversationServiceStub(channel)
        conversations.CreateConversation(
            cv.CreateConversationRequest(parent="users/noticed", conversation_id="c1")
        )
        notices = list(listener.notifies(timeout=NOTIFY_TIMEOUT_S, stop_after=1))

    assert [(n.channel, n.payload) for n in notices] == [("mnemo_changes", "noticed 1")]


USERS = [f"users/u{n}" for n in range(12)]


def test_a_third_worker_takes_shards_and_the_data_stays() -> None:
    name = "mnemo_rebalanced"
    with CitusCluster(workers=2) as cluster:
        cluster.create_database(name)
        cluster.migrate_and_distribute(name)
        url = cluster.database_url(name)
        with running_server(url) as target, grpc.insecure_channel(target) as channel:
            memories = memories_pb2_grpc.MemoryServiceStub(channel)
            for user in USERS:
                create(memories, f"{user} likes tea", parent=user)
            before = {user: [m.text for m in listed(memories, user)] for user in USERS}

            third = cluster.add_worker([name])
            cluster.rebalance(name)

            assert cluster.shards_per_node(name).get(third.port, 0) > 0
            assert {user: [m.text for m in listed(memories, user)] for user in USERS} == before
            for user in USERS:
                create(memories, f"{user} likes coffee too", parent=user)
            assert all(len(listed(memories, user)) == 2 for user in USERS)


def test_rows_written_before_distributing_move_into_the_shards(empty_url: str) -> None:
    assert run_mnemo("migrate", "--database-url", empty_url).returncode == 0
    with running_server(empty_url) as target, grpc.insecure_channel(target) as channel:
        memories = memories_pb2_grpc.MemoryServiceStub(channel)
        for user in USERS:
            create(memories, f"{user} likes tea", parent=user)
        before = {user: [m.text for m in listed(memories, user)] for user in USERS}

    done = _distribute(empty_url)

    assert done.returncode == 0, done.stderr
    _assert_placed_as_planned(empty_url)
    # The coordinator's own copies are gone: only the shards hold the rows.
    assert _query(empty_url, "SELECT pg_relation_size('memories')") == [(0,)]
    with running_server(empty_url) as target, grpc.insecure_channel(target) as channel:
        memories = memories_pb2_grpc.MemoryServiceStub(channel)
        assert {user: [m.text for m in listed(memories, user)] for user in USERS} == before
