"""Which RPCs route to one shard (``make test-citus`` only).

The server's database refuses every statement that would run on more than
one shard: ``citus.multi_task_query_log_level = error`` (Citus raises it for
any query of several tasks, instead of logging it). Every conformance
scenario then runs against that server (``--auth none``, no embedder and no
maintenance pass in the window: their fan-outs are documented ones,
docs/operations.md). A call whose statements all route to one shard runs as
on plain PostgreSQL; one that needs several shards fails, naming the query.
The test prints, per RPC the scenarios call, whether it stayed on one shard,
and fails if any RPC outside ``FAN_OUT`` (the documented ones, each with its
reason) needed several.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.conformance import run
from tests.support.citus import CitusCluster
from tests.support.pgcluster import libpq_url
from tests.support.shard_audit import GLOBAL_STATEMENTS
from tests.support.subprocess_server import subprocess_server

pytestmark = [pytest.mark.postgres, pytest.mark.citus]

NAME = "mnemo_routing"
MULTI_SHARD = "multi-task query about to be executed"

# Scenarios that need the server's embedder: its backlog walk is a
# documented fan-out, so the server here runs without one (their RPCs are
# called by other scenarios).
NEEDS_EMBEDDER = frozenset({"memories/recall-default-fuses"})

FAN_OUT: dict[str, str] = {}
"""RPCs that may run a statement on several shards, with the reason."""


def _logged_statements(log: str) -> list[str]:
    """The statements of the SQLAlchemy errors in a server log (``[SQL: ...]``,
    over one or more lines), each on one line."""
    found = re.findall(r"^\[SQL: (.*?)\]$", log, flags=re.MULTILINE | re.DOTALL)
    return [" ".join(statement.split()) for statement in found]


def _methods(scenario: run.Scenario) -> list[str]:
    return [str(step["method"]) for step in scenario.data.get("steps", []) if "method" in step]


@pytest.mark.timeout(900)
def test_every_rpc_the_scenarios_call_routes_to_one_shard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with CitusCluster(workers=2) as cluster:
        cluster.create_database(NAME)
        cluster.migrate_and_distribute(NAME)
        url = cluster.database_url(NAME)
        with psycopg.connect(libpq_url(url), autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} SET citus.multi_task_query_log_level = 'error'").format(
                    sql.Identifier(NAME)
                )
            )
        with subprocess_server(
            url,
            "--auth",
            "none",
            "--embedder",
            "none",
            "--purge-interval-seconds",
            "86400",
            log_dir=tmp_path,
        ) as server:
            pool = run.load_generated()
            scenarios = [
                s for s in run.load_scenarios([run.SCENARIOS]) if s.id not in NEEDS_EMBEDDER
            ]
            called: set[str] = set()
            several: dict[str, list[str]] = defaultdict(list)
            other_failures: list[str] = []
            for index, scenario in enumerate(scenarios):
                called.update(_methods(scenario))
                logged = len(server.log_text())
                why = run.run_scenario(scenario, server.target, run.users_for("r", index), pool)
                if why is None:
                    continue
                # The call failed INTERNAL; the server's log names the query.
                refused = [
                    line
                    for line in server.log_text()[logged:].splitlines()
                    if MULTI_SHARD in line or line.startswith("[SQL: ")
                ]
                if refused:
                    failed = [m for m in _methods(scenario) if m in why] or ["?"]
                    several[failed[0]].append(f"{scenario.id}: {why}; {' '.join(refused)}")
                else:
                    other_failures.append(f"{scenario.id}: {why}")
            # The maintenance pass runs once at start: its fan-outs are documented.
            refused_outside_calls = _logged_statements(server.log_text())
            assert server.stop() == 0
    table = "\n".join(
        f"  {method:60} {'several shards' if method in several else 'one shard'}"
        for method in sorted(called)
    )
    with capsys.disabled():
        print(f"\nRouting of the {len(called)} RPCs the conformance scenarios call:\n{table}")
        print(f"statements of several shards outside the calls: {len(refused_outside_calls)}")
    assert other_failures == []
    with capsys.disabled():
        for method, reasons in several.items():
            print(f"{method}:", *reasons, sep="\n  ")
    assert {m: w for m, w in several.items() if m not in FAN_OUT} == {}
    undocumented = [
        statement
        for statement in refused_outside_calls
        if not any(g.matches(statement) for g in GLOBAL_STATEMENTS)
    ]
    assert undocumented == []
