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

Each carries ``LICENSE`` (Apache-2.0; the model's wheel, its upstream
licence). The tools a kind needs beyond Python (npm; Maven and a JDK) are
looked for first: a missing one ends the run before anything is built, with
one line naming it and the ``--only`` that leaves its kind out (exit 2).

    python tools/dist.py [--only python,npm,kotlin]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
PYTHON_PROJECTS = (ROOT, ROOT / "clients" / "python")
KINDS = ("python", "npm", "kotlin")
# What each kind builds, and the programs it runs beyond this Python (with
# what provides them).
NEEDS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "npm": ("the npm tarball", (("npm", "Node.js"),)),
    "kotlin": ("the Kotlin jar", (("mvn", "Maven"), ("java", "a JDK"))),
}
EXIT_USAGE = 2

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
        shutil.copy2(ROOT / "LICENSE", copy / "LICENSE")  # npm pack always takes it
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
    # Maven 3.8's console library writes colour resets (ESC [0m) as it starts
    # and stops, even in batch mode and off a terminal; jansi.noreset, read
    # only at JVM start (so MAVEN_OPTS, not -D), stops them. -Dstyle.color:
    # Maven 3.9's own switch.
    opts = f"{os.environ.get('MAVEN_OPTS', '')} -Djansi.noreset=true".strip()
    subprocess.run(
        ["mvn", "-B", "-q", "-Dstyle.color=never", "-DskipTests", "package"],
        cwd=project,
        env={**os.environ, "MAVEN_OPTS": opts},
        check=True,
    )
    out = DIST / "kotlin"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (jar,) = [p for p in (project / "target").glob("mnemo-client-*.jar") if "sources" not in p.name]
    return Path(shutil.copy2(jar, out))


def missing_tools(kinds: list[str]) -> str:
    """One line naming the programs ``kinds`` need that are not on ``PATH``,
    and the ``--only`` of the kinds that could be built (empty when nothing
    is missing)."""
    wants: list[str] = []
    absent: list[str] = []
    left: list[str] = []
    for kind in kinds:
        artefact, programs = NEEDS.get(kind, ("", ()))
        missing = [f"{name} ({what})" for name, what in programs if shutil.which(name) is None]
        if missing:
            wants.append(f"{artefact} needs {' and '.join(missing)}")
            absent += missing
        else:
            left.append(kind)
    if not wants:
        return ""
    line = f"dist: {'; '.join(wants)}, not found on PATH: install {'it' if len(absent) == 1 else 'them'}"
    if left:
        line += f', or build the others only: make dist ARGS="--only {",".join(left)}"'
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(KINDS), help="of " + ", ".join(KINDS))
    kinds = parser.parse_args().only.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown: {', '.join(sorted(unknown))}")
    if problem := missing_tools(kinds):
        print(problem, file=sys.stderr)
        return EXIT_USAGE
    built: list[Path] = []
    try:
        if "python" in kinds:
            built += python_packages()
        if "npm" in kinds:
            built.append(npm_package())
        if "kotlin" in kinds:
            built.append(kotlin_jar())
    except subprocess.CalledProcessError as failed:
        # What the step printed (when it was captured), then one line.
        for output in (failed.stdout, failed.stderr):
            if output:
                print(output, end="" if output.endswith("\n") else "\n", file=sys.stderr)
        program = Path(str(failed.cmd[0])).name
        print(f"dist: {program} exited {failed.returncode} (its output above)", file=sys.stderr)
        return 1
    for path in built:
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size / 1024:,.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
