"""The deployment files of ``deploy/``, checked as far as this machine allows
(no container engine runs here: docs/deployment.md says what was and was not
run):

- ``compose.yaml`` against the compose specification's JSON schema (the one
  the pinned ``docker-compose`` wheel ships, fetched from the package index
  into the per-user cache), and what it points at exists;
- ``systemd/mnemo.service`` by ``systemd-analyze verify`` (with the unit's
  ``/opt/mnemo`` made this checkout's venv), which must say nothing;
- ``kubernetes/*.yaml`` by ``tests/deploy/k8scheck``: strict decoding into the
  official API types (``k8s.io/api``) and the references between them;
- ``nginx/mnemo.conf``: the directives of the configuration
  ``test_load_balancer.py`` runs.

Each checker is also shown a broken copy, so that none passes vacuously.
The Dockerfile's start-up commands run against the built packages in
``tests/dist/installed.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.support.grpc_balancer import directives, nginx_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_WHEEL = "docker-compose==1.29.2"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mnemo-peers"
TIMEOUT_S = 300


def _compose_schema() -> dict[str, Any]:
    wheels = sorted(CACHE.glob("docker_compose-1.29.2-*.whl"))
    if not wheels:
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                COMPOSE_WHEEL,
                "-d",
                str(CACHE),
            ],
            check=True,
            timeout=TIMEOUT_S,
        )
        wheels = sorted(CACHE.glob("docker_compose-1.29.2-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        schema: dict[str, Any] = json.loads(wheel.read("compose/config/compose_spec.json"))
    return schema


def _interpolated(text: str) -> str:
    """``${NAME:?message}`` as compose fills it in when NAME is set."""
    return re.sub(r"\$\{(\w+):\?[^}]*\}", "example-value", text)


def _compose_problems(text: str) -> list[str]:
    validator = jsonschema.Draft7Validator(_compose_schema())
    document = yaml.safe_load(_interpolated(text))
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(document)]


def test_the_compose_file_fits_the_compose_specification() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    assert _compose_problems(text) == []
    assert _compose_problems(text.replace("condition: service_healthy", "condition: healthy"))
    compose = yaml.safe_load(_interpolated(text))
    services = compose["services"]
    assert set(services) == {"postgres", "mnemo", "nginx"}
    build = services["mnemo"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()
    assert services["mnemo"]["deploy"]["replicas"] == 2
    assert services["mnemo"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    (mount,) = services["nginx"]["volumes"]
    assert (DEPLOY / mount.split(":")[0]).is_file()


def test_the_systemd_unit_verifies_without_a_word(tmp_path: Path) -> None:
    mnemo = shutil.which("mnemo", path=str(Path(sys.executable).parent))
    assert mnemo is not None
    text = (DEPLOY / "systemd" / "mnemo.service").read_text()

    def verify(unit: str) -> str:
        path = tmp_path / "mnemo.service"
        path.write_text(unit.replace("/opt/mnemo/bin/mnemo", mnemo))
        done = subprocess.run(
            ["systemd-analyze", "verify", str(path)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        return (done.stdout + done.stderr).strip() + ("" if done.returncode == 0 else " (failed)")

    assert verify(text) == ""
    assert "Unknown key" in verify(text.replace("NoNewPrivileges=", "NoNewPrivilege="))


def _k8scheck(*files: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("go") is None:
        pytest.skip("no go toolchain for tests/deploy/k8scheck")
    return subprocess.run(
        ["go", "run", ".", *map(str, files)],
        cwd=ROOT / "tests" / "deploy" / "k8scheck",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_the_kubernetes_manifests_decode_strictly_and_refer_to_each_other(
    tmp_path: Path,
) -> None:
    manifests = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
    checked = _k8scheck(*manifests)
    assert checked.returncode == 0, checked.stderr
    assert "1 secrets, 1 deployments, 0 jobs, 1 services: ok" in checked.stdout
    misspelled, misnamed = tmp_path / "misspelled.yaml", tmp_path / "misnamed.yaml"
    misspelled.write_text(manifests[0].read_text().replace("readinessProbe", "readinesProbe"))
    # The init container's key (the first of the two): init containers are checked too.
    misnamed.write_text(
        manifests[0].read_text().replace("key: database-url", "key: database-uri", 1)
    )
    refused = _k8scheck(misspelled)
    assert refused.returncode == 1
    assert 'unknown field "readinesProbe"' in refused.stderr
    refused = _k8scheck(misnamed)
    assert refused.returncode == 1
    assert "secret key mnemo/database-uri, which is not in the files" in refused.stderr


def _first_server_block(config: str) -> str:
    start = config.index("server {")
    depth = 0
    for end in range(start, len(config)):
        depth += {"{": 1, "}": -1}.get(config[end], 0)
        if depth == 0 and config[end] == "}":
            return config[start : end + 1]
    raise AssertionError("no server block")


def _grpc_server(config: str) -> list[str]:
    """The directives of the gRPC server block but where calls go (the tested
    configuration's upstream block of fixed addresses; compose's DNS name)."""
    block = _first_server_block(config)
    return [d for d in directives(block) if not d.startswith(("server", "set ", "grpc_pass "))]


def test_the_compose_nginx_configuration_is_the_tested_one(tmp_path: Path) -> None:
    ours = (DEPLOY / "nginx" / "mnemo.conf").read_text()
    tested = nginx_config(1, ["127.0.0.1:2"], tmp_path)
    assert _grpc_server(ours) == _grpc_server(tested)
    assert "grpc_next_upstream error timeout;" in _grpc_server(ours)
    assert "grpc_pass grpc://$mnemo_grpc;" in _first_server_block(ours)
    # Where calls go is asked of the engine's DNS at run time, for both ports.
    assert "include /etc/nginx/mnemo-resolver.conf;" in directives(ours)
    assert "proxy_pass http://$mnemo_web;" in directives(ours)


def test_the_image_build_copies_what_the_wheels_name_as_their_licence() -> None:
    # pyproject.toml's license-files: without them in the build's copy,
    # setuptools builds the wheels silently without a licence (and the
    # client's LICENSE, a link to the root's, points at nothing).
    copied = {
        name
        for line in (DEPLOY / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ") and "--from" not in line
        for name in line.split()[1:-1]
    }
    declared = re.findall(
        r"license-files\s*=\s*\[([^\]]*)\]", (ROOT / "pyproject.toml").read_text()
    )
    assert declared
    for name in re.findall(r'"([^"]+)"', declared[0]):
        assert name in copied, f"{name} is not copied by deploy/Dockerfile"
    client = ROOT / "clients" / "python" / "LICENSE"
    assert "clients/python" in copied and client.resolve() == (ROOT / "LICENSE").resolve()
