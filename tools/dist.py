"""``make dist``: the installable packages, in ``dist/``.

- ``dist/python/``: the wheel and the sdist of ``mnemo-server`` (this
  directory) and of ``mnemo-client`` (``clients/python``), built by their
  own build backend (setuptools' PEP 517 hooks, run in each project's
  directory with this environment's setuptools: no isolated build
  environment to download), and the wheel of the default embedding model
  that ``mnemo-server`` depends on, ``mnemo-model-bge-small-en-v1.5``
  (``tools/model_wheel.py``: built from the upstream files, checked by
  SHA-256; no sdist, which would carry the same 35 MB of model again);
- ``dist/npm/``: ``npm pack`` of the TypeScript client (its ``prepack``
  script compiles it first, so the tarball carries the JavaScript);
- ``dist/kotlin/``: the Kotlin client's jar (``mvn package``, tests skipped:
  ``make test-kotlin`` runs them).

    python tools/dist.py [--only python,npm,kotlin]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
PYTHON_PROJECTS = (ROOT, ROOT / "clients" / "python")
KINDS = ("python", "npm", "kotlin")

_HOOKS = (
    "import sys\n"
    "from setuptools import build_meta\n"
    "out = sys.argv[1]\n"
    "build_meta.build_sdist(out)\n"
    "build_meta.build_wheel(out)\n"
)


def python_packages() -> list[Path]:
    """The wheels and sdists of both Python projects and the model's wheel,
    in ``dist/python``."""
    out = DIST / "python"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for project in PYTHON_PROJECTS:
        subprocess.run(
            [sys.executable, "-c", _HOOKS, str(out)],
            cwd=project,
            check=True,
            capture_output=True,
            text=True,
        )
        # setuptools leaves its build trees beside the project.
        shutil.rmtree(project / "build", ignore_errors=True)
    shutil.rmtree(out / "build", ignore_errors=True)
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "model_wheel.py"), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return sorted(p for p in out.iterdir() if p.suffix in (".whl", ".gz"))


def npm_package() -> Path:
    """The TypeScript client's tarball, in ``dist/npm``: packed from a copy
    of its sources (the ``prepack`` build then starts from nothing, and the
    checkout's own ``dist/`` is left alone)."""
    project = ROOT / "clients" / "typescript"
    out = DIST / "npm"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="mnemo-npm-pack-") as scratch:
        copy = Path(scratch)
        for name in ("src", "test"):
            shutil.copytree(project / name, copy / name)
        for name in ("package.json", "package-lock.json", "tsconfig.json"):
            shutil.copy2(project / name, copy / name)
        (copy / "node_modules").symlink_to(project / "node_modules")
        name = subprocess.run(
            ["npm", "pack", "--silent", "--pack-destination", str(out)],
            cwd=copy,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()[-1]
    return out / name


def kotlin_jar() -> Path:
    """The Kotlin client's jar, in ``dist/kotlin``."""
    project = ROOT / "clients" / "kotlin"
    subprocess.run(
        ["mvn", "-B", "-q", "-Dstyle.color=never", "-DskipTests", "package"],
        cwd=project,
        check=True,
    )
    out = DIST / "kotlin"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (jar,) = [p for p in (project / "target").glob("mnemo-client-*.jar") if "sources" not in p.name]
    return Path(shutil.copy2(jar, out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(KINDS), help="of " + ", ".join(KINDS))
    kinds = parser.parse_args().only.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown: {', '.join(sorted(unknown))}")
    built: list[Path] = []
    if "python" in kinds:
        built += python_packages()
    if "npm" in kinds:
        built.append(npm_package())
    if "kotlin" in kinds:
        built.append(kotlin_jar())
    for path in built:
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size / 1024:,.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
