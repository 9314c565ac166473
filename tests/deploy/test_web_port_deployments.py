"""Every reference deployment reaches the web port (issue 36, item 5): gRPC-Web,
Connect and the memory console, ``MNEMO_WEB_LISTEN``. Compose sets it on the
replicas and nginx proxies it, finding the replicas through a ``resolver`` at
run time (the file passes ``nginx -t`` with Debian's nginx); Kubernetes sets
it and the Service carries it; the systemd unit's environment file sets it
(``test_systemd_unit.py`` runs it); compose.yaml's header says to make the
secret readable by the image's user. ``make test-image`` runs compose (with
podman-compose) and calls the web port through nginx.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.test_deploy_files import DEPLOY, TIMEOUT_S, _interpolated
from tests.support.grpc_balancer import directives

WEB_LISTEN = "0.0.0.0:8080"


def _compose() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load(_interpolated((DEPLOY / "compose.yaml").read_text()))
    return compose


def test_compose_serves_the_web_port_through_nginx() -> None:
    services = _compose()["services"]
    assert services["mnemo"]["environment"]["MNEMO_WEB_LISTEN"] == WEB_LISTEN
    assert "8080:8080" in services["nginx"]["ports"]
    text = (DEPLOY / "nginx" / "mnemo.conf").read_text()
    assert "\n    listen 8080;\n" in text
    config = directives(text)
    assert "set $mnemo_web mnemo:8080;" in config
    assert "proxy_pass http://$mnemo_web;" in config
    assert "proxy_set_header Host $http_host;" in config
    # The resolver line the file includes is written by the nginx service's command.
    assert "include /etc/nginx/mnemo-resolver.conf;" in config
    command = " ".join(services["nginx"]["command"])
    assert "/etc/resolv.conf > /etc/nginx/mnemo-resolver.conf" in command
    assert '"resolver "' in command


def test_the_compose_header_makes_the_secret_readable_by_the_image_user() -> None:
    header = (DEPLOY / "compose.yaml").read_text().split("\nservices:")[0]
    assert "chmod 644 deploy/secrets/jwt-secret" in header
    assert "USER mnemo" in (DEPLOY / "Dockerfile").read_text()


def test_kubernetes_serves_the_web_port() -> None:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "mnemo.yaml").read_text()))
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    (server,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in server["env"]}
    assert env["MNEMO_WEB_LISTEN"] == WEB_LISTEN
    assert {"name": "web", "containerPort": 8080} in server["ports"]
    (service,) = [d for d in documents if d["kind"] == "Service"]
    assert {"name": "web", "port": 8080, "targetPort": "web", "appProtocol": "http"} in service[
        "spec"
    ]["ports"]


def test_the_systemd_environment_file_sets_the_web_port() -> None:
    lines = (DEPLOY / "systemd" / "mnemo.env").read_text().splitlines()
    assert f"MNEMO_WEB_LISTEN={WEB_LISTEN}" in lines


def test_the_nginx_file_passes_nginx_t(tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    config = tmp_path / "nginx.conf"
    resolver = tmp_path / "mnemo-resolver.conf"
    resolver.write_text("resolver 127.0.0.1 valid=5s;\n")
    ours = (DEPLOY / "nginx" / "mnemo.conf").read_text()
    ours = ours.replace("/etc/nginx/mnemo-resolver.conf", str(resolver))
    included = tmp_path / "mnemo.conf"
    included.write_text(ours)
    config.write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n"
        f"events {{}}\nhttp {{\n    access_log off;\n"
        f"    client_body_temp_path {tmp_path}/body;\n    proxy_temp_path {tmp_path}/proxy;\n"
        f"    include {included};\n}}\n"
    )
    checked = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(config), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr
    included.write_text(ours.replace("proxy_buffering off", "proxy_bufering off"))
    refused = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(config), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert refused.returncode == 1
    assert 'unknown directive "proxy_bufering"' in refused.stderr
