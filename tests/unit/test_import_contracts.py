"""The import contracts of the layers ([tool.importlinter] in pyproject.toml).

The first test runs them on the server package as it is; the second proves
they can fail: it runs the same contracts on a copy of the package with one
forbidden import planted for each contract, and checks that every contract
breaks and names the planted import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS = 6

# (file under mnemo_server/, planted line, what the broken contract reports).
PLANTED = (
    ("store/users.py", "import grpc", "mnemo_server.store.users -> grpc"),
    (
        "domain/names.py",
        "from mnemo_server.config import Settings",
        "mnemo_server.domain.names -> mnemo_server.config",
    ),
    (
        "runtime/periodic.py",
        "from mnemo_server.store.rows import now_micros",
        "mnemo_server.runtime.periodic -> mnemo_server.store.rows",
    ),
    (
        "auth/jwt.py",
        "from mnemo_server.api.names import ID_PATTERN",
        "mnemo_server.auth.jwt -> mnemo_server.api.names",
    ),
    (
        "api/conversations/servicer.py",
        "from mnemo_server.store.composed import SqlStore",
        "mnemo_server.api.conversations.servicer -> mnemo_server.store.composed",
    ),
    (
        "api/memories/convert.py",
        "from mnemo_server.api.sync import convert",
        "mnemo_server.api.memories.convert -> mnemo_server.api.sync.convert",
    ),
)


def _lint_imports(source_root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts, resolving ``mnemo_server`` under ``source_root``."""
    env = {**os.environ, "PYTHONPATH": str(source_root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(PYPROJECT), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_server_keeps_its_import_contracts() -> None:
    run = _lint_imports(ROOT / "server", ROOT)
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in report, report


def test_every_contract_breaks_on_a_forbidden_import(tmp_path: Path) -> None:
    source_root = tmp_path / "src"
    package = source_root / "mnemo_server"
    shutil.copytree(
        ROOT / "server" / "mnemo_server", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    for relative, line, _ in PLANTED:
        path = package / relative
        path.write_text(path.read_text() + f"\n{line}  # planted by the test\n")
    run = _lint_imports(source_root, tmp_path)
    report = run.stdout + run.stderr
    assert run.returncode == 1, report
    assert f"Contracts: 0 kept, {CONTRACTS} broken." in report, report
    for _, _, reported in PLANTED:
        assert reported in report, (reported, report)
