"""Run the OpenAI Agents SDK's own session tests, and ours, against ``MnemoSession``.

    .venv-peers/bin/python tests/peers/run_openai_agents.py [--cache DIR] [PYTEST ARGS...]

(``make test-openai-agents``.) The sdist of the installed ``openai-agents``
version is fetched once from the package index (``pip download --no-binary
:all:``) into the cache (``~/.cache/mnemo-peers`` by default), its ``tests/``
unpacked beside it; never copied into this repository. Then two pytest runs,
each with ``openai_agents_plugin`` (a live Mnemo server on 127.0.0.1 for the
run): the SDK's files in ``SDK_TEST_FILES``, in the unpacked sdist with its
own pytest configuration; then ours, ``tests/peers`` (its ``pytest-peers.ini``).
Exits non-zero when either fails.
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
PACKAGE = "openai-agents"
#: The SDK's test files that exercise the ``Session`` protocol through ``SQLiteSession``.
SDK_TEST_FILES = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_encrypt_session.py",
    "tests/test_tool_batch_failure_history.py",
    "tests/test_native_tool_failure_history.py",
    "tests/test_tool_failure_boundaries.py",
    "tests/test_soft_cancel.py",
)
#: Every test is bounded in time (pytest-timeout).
TIMEOUT_S = "120"


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mnemo-peers"


def sdist_tests(cache: Path, release: str) -> Path:
    """The unpacked sdist of ``openai-agents==release`` (its tests and pyproject)."""
    root = cache / f"openai_agents-{release}"
    done = root / ".unpacked"
    if done.exists():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"openai_agents-{release}.tar.gz"
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
                PACKAGE,  # the sdist of this one; its build backend may come as a wheel
                f"{PACKAGE}=={release}",
                "--dest",
                str(cache),
            ],
            check=True,
            timeout=600,
        )
    prefix = f"openai_agents-{release}/"
    wanted = (prefix + "tests/", prefix + "pyproject.toml")
    with tarfile.open(archive) as sdist:
        members = [m for m in sdist.getmembers() if m.name.startswith(wanted)]
        sdist.extractall(cache, members=members, filter="data")
    done.touch()
    return root


def pytest(args: list[str], cwd: Path) -> int:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        "MNEMO_SERVER_PYTHON": os.environ.get(
            "MNEMO_SERVER_PYTHON", str(REPO / ".venv" / "bin" / "python")
        ),
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "openai_agents_plugin",
        "-p",
        "no:cacheprovider",
    ]
    print("==>", " ".join(command + args), f"(in {cwd})", flush=True)
    return subprocess.run(command + args, cwd=cwd, env=env, check=False).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=default_cache())
    options, pytest_args = parser.parse_known_args()
    release = version(PACKAGE)
    sdk = sdist_tests(options.cache, release)
    sdk_run = pytest(["-q", f"--timeout={TIMEOUT_S}", *SDK_TEST_FILES, *pytest_args], sdk)
    # Apart: a file outside the sdist would bring its parent conftest (tests/conftest.py,
    # the server's) into that run, and the SDK's package `tests` would shadow ours.
    ours = pytest(
        [
            "-q",
            f"--timeout={TIMEOUT_S}",
            "-c",
            str(HERE / "pytest-peers.ini"),
            str(HERE),
            *pytest_args,
        ],
        REPO,
    )
    return sdk_run or ours


if __name__ == "__main__":
    sys.exit(main())
