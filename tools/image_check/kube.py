"""``podman kube play`` of ``deploy/kubernetes/mnemo.yaml`` (issue 36, item 2):
on an empty PostgreSQL database (a stand-in pod on the same podman network)
both replicas migrate in their init container, then serve, and no server
container is ever restarted; played again (``--replace``, as a new image's
apply), they serve again over the data written before.

podman 4.3.1 (Debian bookworm's) plays the manifests with five changes made
here, each for a limitation of that podman, none of Kubernetes
(``playable``), and mounts the Secret's values base64-encoded (the tokens are
signed with what the pods read); docs/deployment.md lists them."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # (PyYAML ships no types; types-PyYAML is not installed)

from mnemo_server.store import migrate
from tools.image_check.common import ROOT, CheckFailed, Podman, say, token, wait_for
from tools.image_check.images import STANDINS

MANIFEST = ROOT / "deploy" / "kubernetes" / "mnemo.yaml"
PLAY_TIMEOUT_S = 300.0
# podman's DNS may take a while to know a new pod's peers: the server waits for
# PostgreSQL meanwhile (--database-wait-seconds).
SERVE_TIMEOUT_S = 240.0


def playable(text: str, jwt_secret: str, database_url: str) -> str:
    """The manifests as podman 4.3.1 plays them, their Secret's values ours."""
    documents: list[dict[str, Any]] = [d for d in yaml.safe_load_all(text) if d]
    values = {"jwt-secret": jwt_secret, "database-url": database_url}
    for document in documents:
        if document["kind"] == "Secret":
            if set(document.pop("stringData")) != set(values):
                raise CheckFailed(f"the Secret of {MANIFEST} has other keys than {set(values)}")
            # 1. Secret volumes read `data` only, not `stringData`.
            document["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
        elif document["kind"] == "Deployment":
            pod = document["spec"]["template"]["spec"]
            # 2. Under `Always`, a finished init container is restarted, and the pod fails.
            pod["restartPolicy"] = "OnFailure"
            for volume in pod["volumes"]:
                if "secret" in volume:
                    volume["secret"]["optional"] = False  # 3. unset, it crashes podman
            for init in pod["initContainers"]:
                # 6. A volume of the image not mounted by the pod (/var/lib/mnemo) becomes an
                # anonymous volume, which podman leaves behind when it removes the finished
                # init container: the init container mounts the pod's scratch volume there.
                init.setdefault("volumeMounts", []).append(
                    {"name": "data", "mountPath": "/var/lib/mnemo"}
                )
            for container in pod["initContainers"] + pod["containers"]:
                # 4. A containerPort is published on every host address: on 127.0.0.1 only
                # here (the checks use `podman exec`), and the replicas' would collide.
                container.pop("ports", None)
                for variable in container.get("env", []):
                    reference = variable.get("valueFrom", {}).get("secretKeyRef")
                    if reference:
                        # 5. A played Secret is read as JSON, which it is not, for `env`.
                        del variable["valueFrom"]
                        variable["value"] = values[reference["key"]]
    played: str = yaml.safe_dump_all(documents, sort_keys=False)
    return played


def _postgres_pod(name: str, password: str) -> str:
    environment = {"POSTGRES_USER": "mnemo", "POSTGRES_PASSWORD": password, "POSTGRES_DB": "mnemo"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "postgres",
                    "image": STANDINS["postgres"],
                    "env": [{"name": k, "value": v} for k, v in environment.items()],
                }
            ]
        },
    }
    dumped: str = yaml.safe_dump(pod, sort_keys=False)
    return dumped


def _exec_python(podman: Podman, container: str, code: str) -> str:
    return podman.output("exec", container, "python", "-c", code, timeout=120)


def _client_code(bearer: str, body: str) -> str:
    return (
        "from mnemo.client import MnemoClient\n"
        f"with MnemoClient('127.0.0.1:50051', token={bearer!r}) as mnemo:\n"
        f"    {body}\n"
    )


class Replicas:
    """The Deployment's pods as podman names them."""

    def __init__(self, podman: Podman, text: str) -> None:
        (deployment,) = [d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment"]
        name = deployment["metadata"]["name"]
        self.podman = podman
        self.pods = [f"{name}-pod-{n}" for n in range(deployment["spec"]["replicas"])]
        (server,) = deployment["spec"]["template"]["spec"]["containers"]
        self.servers = [f"{pod}-{server['name']}" for pod in self.pods]

    def serve(self) -> None:
        """Every replica SERVING; none of their servers ever restarted."""
        for container in self.servers:

            def serving(container: str = container) -> bool | None:
                done = self.podman.run("exec", container, "mnemo", "health", check=False)
                return True if done.stdout.strip() == "SERVING" else None

            wait_for(f"{container} serving", serving, SERVE_TIMEOUT_S)
            restarts = self.podman.output(
                "inspect", "--format", "{{.RestartCount}}", container, timeout=60
            )
            log = self.podman.logs(container)
            if restarts != "0" or "mnemo migrate" in log:
                raise CheckFailed(f"{container} restarted {restarts} times:\n{log}")


def check_kube(podman: Podman, scratch: Path) -> None:
    prefix = f"mnemo-check-{os.getpid()}"
    network, database = f"{prefix}-kube", f"{prefix}-postgres"
    password, jwt_secret = secrets.token_hex(16), secrets.token_urlsafe(48)
    url = f"postgresql+psycopg://mnemo:{password}@{database}:5432/mnemo"
    text = MANIFEST.read_text()
    replicas = Replicas(podman, text)
    taken = [p for p in replicas.pods if podman.exists("pod", p)]
    if taken or podman.secret_exists("mnemo"):
        raise CheckFailed(f"pods {taken} or the podman secret mnemo exist already: remove them")

    podman.created_network(network)
    podman.run("network", "create", network)
    postgres = scratch / "postgres.yaml"
    postgres.write_text(_postgres_pod(database, password))
    podman.started_pod(database)
    podman.run("kube", "play", "--network", network, str(postgres), timeout=PLAY_TIMEOUT_S)
    ready = ("exec", f"{database}-postgres", "pg_isready", "-U", "mnemo", "-d", "mnemo")
    wait_for(
        "the stand-in PostgreSQL",
        lambda: True if podman.run(*ready, check=False).returncode == 0 else None,
        SERVE_TIMEOUT_S,
    )

    manifests = scratch / "mnemo.yaml"
    manifests.write_text(playable(text, jwt_secret, url))
    for pod in replicas.pods:
        podman.started_pod(pod)
    podman.created_secret("mnemo")
    if not podman.exists("volume", "mnemo"):
        podman.created_volume("mnemo")  # podman's copy of the Secret for the pods
    podman.run("kube", "play", "--network", network, str(manifests), timeout=PLAY_TIMEOUT_S)
    replicas.serve()
    revision = podman.output(
        "exec", f"{database}-postgres", "psql", "-U", "mnemo", "-d", "mnemo", "-tAc",
        "SELECT version_num FROM alembic_version",
    )  # fmt: skip
    if revision != migrate.head_revision():
        raise CheckFailed(f"the database is at {revision!r}, not {migrate.head_revision()}")
    say(f"kube: {len(replicas.pods)} pods migrated the empty database to {revision}, then served")

    # 6. The Secret's files hold its `data` values as given, base64: the server's
    # key is what it reads, and the tokens are signed with that.
    mounted = podman.output("exec", replicas.servers[0], "cat", "/etc/mnemo/jwt-secret")
    if mounted != jwt_secret:
        say("kube: podman mounted the Secret's value base64-encoded; tokens signed with that")
    bearer = token(mounted, "ada")
    _exec_python(
        podman,
        replicas.servers[0],
        _client_code(bearer, "mnemo.create_memory('ada', 'Ada lives in Lyon.', key='home')"),
    )
    # --replace removes the pods, not their anonymous volumes: removed here.
    replaced = [v for pod in replicas.pods for v in podman.anonymous_volumes(pod)]
    podman.run(
        "kube", "play", "--replace", "--network", network, str(manifests), timeout=PLAY_TIMEOUT_S
    )
    for volume in replaced:
        podman.run("volume", "rm", volume, check=False, timeout=60)
    replicas.serve()
    texts = _exec_python(
        podman,
        replicas.servers[-1],
        _client_code(bearer, "print([m.text for m in mnemo.list_memories('ada')])"),
    )
    if "Ada lives in Lyon." not in texts:
        raise CheckFailed(f"played again, the replicas lost the data: {texts}")
    say("kube: played again (--replace) on the migrated database: served, data kept")
    podman.run("kube", "down", str(manifests), check=False, timeout=PLAY_TIMEOUT_S)
