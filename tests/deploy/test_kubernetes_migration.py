"""The Kubernetes manifests do not race the migration (issue 36, item 2): no
Job (one `kubectl apply` started it beside the Deployment, whose pods then
crash-looped on the empty schema; its fixed name made a new image's apply fail
while it lived), but an init container in every pod that runs ``mnemo
migrate`` with the server's image and database before the server starts.
Replicas starting together run it together, so several ``mnemo migrate`` at
once on one empty PostgreSQL database must all succeed (they wait for each
other on the migrations' advisory lock). ``make test-image`` plays the
manifests with ``podman kube play`` on an empty database and again on the
migrated one.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from mnemo_server.store import migrate
from tests.support.databases import PostgresDatabases
from tests.support.subprocess_server import subprocess_server

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
RUNNERS = 4
TIMEOUT_S = 120


def _documents() -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def _env_sources(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_no_job_and_every_pod_migrates_before_its_server_starts() -> None:
    documents = _documents()
    assert [d["kind"] for d in documents if d["kind"] in ("Job", "CronJob")] == []
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (server,) = pod["containers"]
    assert server["args"] == ["mnemo", "serve"]
    (init,) = pod["initContainers"]
    assert init["command"] == ["mnemo", "migrate"]
    assert init["image"] == server["image"]
    database = _env_sources(server)["MNEMO_DATABASE_URL"]
    assert _env_sources(init)["MNEMO_DATABASE_URL"] == database


def _migrate(url: str) -> subprocess.CompletedProcess[str]:
    mnemo = Path(sys.executable).parent / "mnemo"
    return subprocess.run(
        [str(mnemo), "migrate", "--database-url", url],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.mark.postgres
def test_replicas_migrating_at_once_all_succeed_then_serve(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.empty()
    try:
        with ThreadPoolExecutor(RUNNERS) as pool:
            runs = list(pool.map(_migrate, [url] * RUNNERS))
        assert [run.returncode for run in runs] == [0] * RUNNERS, [run.stderr for run in runs]
        head = migrate.head_revision()
        assert all(f"is at revision {head}" in run.stdout for run in runs)
        again = _migrate(url)  # a pod started later: nothing to do
        assert again.returncode == 0, again.stderr
        with subprocess_server(url, log_dir=tmp_path) as server:
            assert server.is_running
    finally:
        postgres_databases.drop(url)
