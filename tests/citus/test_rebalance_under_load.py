"""Shards move while a server writes (``make test-citus`` only): a third
worker joins a coordinator and two workers, the shards are rebalanced onto
it by logical replication, and the shard group of the user being written is
moved to it if the rebalance left it in place, all while client threads
append, remember and save with request ids. No acknowledged write is lost
or doubled (``tests.concurrency.load``: each write retried under its request
id until acknowledged), the user's change feed is gapless and in order, a
watch opened before the moves sees every change in order, and a watch
resumed from a cursor taken during them sees the rest."""

from __future__ import annotations

from pathlib import Path

import grpc
import psycopg
import pytest

from tests.api.changes import Watch
from tests.concurrency.load import USER, feed_cursors, write_load
from tests.support.citus import HOST, CitusCluster
from tests.support.pgcluster import libpq_url
from tests.support.subprocess_server import subprocess_server

pytestmark = [pytest.mark.postgres, pytest.mark.citus]

NAME = "mnemo_rebalance_load"
WRITES_BETWEEN_STEPS = 40


def _until(watch: Watch, cursor: int) -> list[int]:
    return [change.cursor for change in watch.changes_until(cursor)]


def _placement(url: str, user_id: str) -> tuple[int, int]:
    """(shard id, node port) of the ``users`` shard holding ``user_id``."""
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute(
            "SELECT s.shardid, s.nodeport FROM citus_shards s "
            "WHERE s.table_name = 'users'::regclass "
            "AND s.shardid = get_shard_id_for_distribution_column('users', %s::text)",
            (user_id,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _move(url: str, shard_id: int, source: int, target: int) -> None:
    """Move a shard group (every co-located table's shard) while writes go on."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute(
            "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, "
            "shard_transfer_mode => 'force_logical')",
            (shard_id, HOST, source, HOST, target),
        )


@pytest.mark.timeout(900)
def test_shards_move_under_a_write_load_and_nothing_is_lost_or_doubled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user_id = USER.split("/", 1)[1]
    with CitusCluster(workers=2) as cluster:
        cluster.create_database(NAME)
        cluster.migrate_and_distribute(NAME)
        url = cluster.database_url(NAME)
        with subprocess_server(url, "--embedder", "none", log_dir=tmp_path) as server:
            watch = Watch(server.target, user=user_id)
            with write_load(lambda: server.target, appenders=4) as load:
                load.wait_for_more(WRITES_BETWEEN_STEPS)
                third = cluster.add_worker([NAME]).port
                assert third is not None
                _, before = _placement(url, user_id)
                cluster.rebalance(NAME)
                load.wait_for_more(WRITES_BETWEEN_STEPS)
                shard, after = _placement(url, user_id)
                moved_by_rebalance = after != before
                if after != third:
                    _move(url, shard, after, third)
                assert _placement(url, user_id)[1] == third
                with grpc.insecure_channel(server.target) as channel:
                    midway = feed_cursors(channel)[-1]
                load.wait_for_more(WRITES_BETWEEN_STEPS)
                load.finish()
                assert load.failures() == []
                load.check(server.target)
            with grpc.insecure_channel(server.target) as channel:
                every = feed_cursors(channel)
            watched = _until(watch, every[-1])
            watch.close()
            resumed = Watch(server.target, after_cursor=midway, user=user_id)
            try:
                rest = _until(resumed, every[-1])
            finally:
                resumed.close()
            assert server.stop() == 0
        placements = cluster.shards_per_node(NAME)
    assert every == list(range(every[0], every[0] + len(every)))  # gapless
    assert watched == every
    assert rest == [c for c in every if c > midway]
    assert placements.get(third, 0) > 0
    with capsys.disabled():
        print(
            f"\nCitus rebalance under load: {load.acknowledged()} writes acknowledged, "
            f"{load.replayed()} replayed, retried {dict(load.failed_attempts())}; "
            f"{len(every)} changes, gapless and in order to the first watch, "
            f"{len(rest)} to the watch resumed midway; the user's shard group "
            f"{'moved by the rebalance' if moved_by_rebalance else 'moved explicitly'} to the "
            f"third worker; shard placements per node port {placements}"
        )
