"""``make test-dist``: the MCP command from the client's wheel alone, as
docs/install.md's MCP row installs it (no server package anywhere).

1. A fresh virtual environment outside the repository gets the client's
   wheel without extras: ``mnemo-mcp`` is there, and says in one line that
   it needs ``pip install 'mnemo-client[mcp]'`` (exit 2, no traceback).
2. ``pip install 'mnemo_client-*.whl[mcp]'`` (dependencies from the package
   index at the versions of ``constraints.txt``): ``mnemo-mcp --help`` and
   ``python -m mnemo.integrations.mcp --help`` print the command's usage, and
   a usage error (no user) is the command's own one line.

    python tests/dist/mcp_extra.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.dist.installed import INSTALL_TIMEOUT_S, STEP_TIMEOUT_S, _clean_env, _run  # noqa: E402


def _refused(command: list[str], home: Path, env: dict[str, str]) -> str:
    """stderr of ``command``, which must exit 2 with one line and no traceback."""
    done = subprocess.run(
        command, cwd=home, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S
    )
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout)
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def main() -> int:
    (wheel,) = sorted((ROOT / "dist" / "python").glob("mnemo_client-*.whl"))
    env = _clean_env()
    with tempfile.TemporaryDirectory(prefix="mnemo-dist-mcp-") as scratch:
        home = Path(scratch)
        venv = home / "venv"
        python, script = str(venv / "bin" / "python"), str(venv / "bin" / "mnemo-mcp")
        pip = [python, "-m", "pip", "install", "--quiet", "--progress-bar", "off"]
        pip += ["-c", str(ROOT / "constraints.txt")]
        _run([sys.executable, "-m", "venv", str(venv)], home, env)
        _run([*pip, str(wheel)], home, env, INSTALL_TIMEOUT_S)
        missing = _refused([script, "--user", "alice"], home, env)
        assert "pip install 'mnemo-client[mcp]'" in missing, missing
        print("test-dist: the client alone: mnemo-mcp says in one line to install the mcp extra")

        started = time.monotonic()
        _run([*pip, f"{wheel}[mcp]"], home, env, INSTALL_TIMEOUT_S)
        print(f"test-dist: mnemo-client[mcp] installed in {time.monotonic() - started:.0f} s")
        for command in ([script], [python, "-m", "mnemo.integrations.mcp"]):
            usage = _run([*command, "--help"], home, env)
            assert usage.startswith("usage: mnemo-mcp ") and "--transport" in usage, usage
        assert not (venv / "bin" / "mnemo").exists()  # the server's command is not needed
        no_user = _refused([script, "--target", "127.0.0.1:1"], home, env)
        assert no_user.startswith("mnemo-mcp: give --user"), no_user
        print(
            "test-dist: with the mcp extra, mnemo-mcp and python -m mnemo.integrations.mcp "
            "run from the client's wheel"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
