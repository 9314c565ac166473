"""Run LangGraph's own store tests against ``MnemoStore``.

    .venv-langgraph/bin/python tests/peers/run_langgraph.py [--cache DIR] [PYTEST ARGS...]

(``make test-langgraph``.) The sdist of the installed ``langgraph-checkpoint``
version is fetched once from the package index (``pip download --no-binary
:all:``) into the cache (``~/.cache/mnemo-peers`` by default) and its
``tests/`` and ``pyproject.toml`` unpacked beside it; never copied into this
repository. Then pytest runs its ``tests/test_store.py`` there (and ours,
``langgraph_checks/langgraph_store_checks.py``, for what those do not reach), with its own
pytest configuration (``asyncio_mode = auto``) and ``-p
langgraph_store_plugin`` (this directory on ``PYTHONPATH``): ``MnemoStore``
against a live Mnemo server (``MNEMO_SERVE``, by default the project's
``.venv/bin/mnemo``) on 127.0.0.1 over a throwaway SQLite database. Exits
with pytest's status.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PACKAGE = "langgraph-checkpoint"
DIST = "langgraph_checkpoint"
#: Our own checks; pytest loads no conftest above this directory (the
#: project's need the server's packages, which this venv does not have).
CHECKS = HERE / "langgraph_checks"
#: The sdist's test files that exercise ``BaseStore`` through ``InMemoryStore``.
TEST_FILES = ("tests/test_store.py",)
#: The whole run is bounded in time (seconds).
RUN_TIMEOUT_S = 300


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mnemo-peers"


def sdist_tests(cache: Path, release: str) -> Path:
    """The unpacked sdist of ``langgraph-checkpoint==release`` (tests, pyproject)."""
    root = cache / f"{DIST}-{release}"
    done = root / ".unpacked"
    if done.exists():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"{DIST}-{release}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{PACKAGE}=={release}",
                "--dest",
                str(cache),
            ],
            check=True,
            timeout=600,
        )
    prefix = f"{DIST}-{release}/"
    wanted = (prefix + "tests/", prefix + "pyproject.toml")
    with tarfile.open(archive) as sdist:
        members = [m for m in sdist.getmembers() if m.name.startswith(wanted)]
        sdist.extractall(cache, members=members, filter="data")
    done.touch()
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=default_cache())
    known, pytest_args = parser.parse_known_args()
    root = sdist_tests(known.cache, version(PACKAGE))
    env = dict(os.environ)
    env.setdefault("MNEMO_SERVE", str(REPO / ".venv" / "bin" / "mnemo"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "langgraph_store_plugin",
        "-p",
        "no:cacheprovider",
        # The sdist's addopts ask for -vv and --durations; a summary line per failure will do.
        "-o",
        "addopts=--strict-markers -ra",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        f"--confcutdir={CHECKS}",
        "-q",
        *TEST_FILES,
        str(CHECKS / "langgraph_store_checks.py"),
        *pytest_args,
    ]
    print(f"==> {PACKAGE} {version(PACKAGE)} tests against MnemoStore, in {root}", flush=True)
    return subprocess.run(command, cwd=root, env=env, timeout=RUN_TIMEOUT_S).returncode


if __name__ == "__main__":
    sys.exit(main())
