"""``make test-dist``, first part: ``make dist`` run as a user runs it, and
what it builds.

1. ``tools/dist.py`` builds every kind (Python, npm, Kotlin) and prints plain
   lines: no terminal escape codes (Maven's console library wrote resets
   even when not on a terminal).
2. Every artefact of ours carries the licence of the repository, Apache-2.0
   (``LICENSE`` at the root), as its ecosystem expects it:
   - the wheels of ``mnemo-server`` and ``mnemo-client``:
     ``License-Expression: Apache-2.0`` in ``METADATA`` and the root's
     ``LICENSE`` in ``*.dist-info/licenses/``;
   - their sdists: the same line in ``PKG-INFO`` and ``LICENSE`` at the top;
   - the npm tarball: ``"license": "Apache-2.0"`` in its ``package.json``
     and ``package/LICENSE``;
   - the Kotlin jar: ``META-INF/LICENSE`` and, in the pom it carries, an
     Apache-2.0 ``<license>``.
3. The default model's wheel keeps the licence of the upstream model
   (``models/bge-small-en-v1.5``: MIT, its ``LICENSE``), not ours.

    python tests/dist/artefacts.py [--no-build]   # --no-build: check dist/ as it is
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
LICENCE = (ROOT / "LICENSE").read_bytes()
MODEL_LICENCE = (ROOT / "models" / "bge-small-en-v1.5" / "LICENSE").read_bytes()
SPDX = "Apache-2.0"
BUILD_TIMEOUT_S = 900
POM = "{http://maven.apache.org/POM/4.0.0}"


def build() -> None:
    """Step 1 of the module doc."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "dist.py")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    print(done.stdout, end="")
    assert done.returncode == 0, f"tools/dist.py exited {done.returncode}:\n{done.stderr}"
    for stream, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        assert "\x1b" not in text, f"tools/dist.py wrote escape codes on {stream}: {text!r}"
    print("test-dist: make dist built every kind, its output free of escape codes")


def check_wheel(path: Path, spdx: str, licence: bytes) -> None:
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        headers = HeaderParser().parsestr(wheel.read(metadata).decode())
        assert headers["License-Expression"] == spdx, (path.name, headers["License-Expression"])
        files = [n for n in names if ".dist-info/licenses/" in n]
        assert [n.rsplit("/", 1)[1] for n in files] == ["LICENSE"], (path.name, files)
        assert wheel.read(files[0]) == licence, f"{path.name}: {files[0]} is not the LICENSE"


def check_sdist(path: Path) -> None:
    with tarfile.open(path) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        headers = HeaderParser().parsestr(_read(sdist, f"{top}/PKG-INFO").decode())
        assert headers["License-Expression"] == SPDX, (path.name, headers["License-Expression"])
        assert _read(sdist, f"{top}/LICENSE") == LICENCE, f"{path.name}: no LICENSE at the top"


def check_npm(path: Path) -> None:
    with tarfile.open(path) as tarball:
        manifest = json.loads(_read(tarball, "package/package.json"))
        assert manifest["license"] == SPDX, (path.name, manifest["license"])
        assert _read(tarball, "package/LICENSE") == LICENCE, f"{path.name}: no package/LICENSE"


def check_jar(path: Path) -> None:
    with zipfile.ZipFile(path) as jar:
        assert "META-INF/LICENSE" in jar.namelist(), f"{path.name}: no META-INF/LICENSE"
        assert jar.read("META-INF/LICENSE") == LICENCE, f"{path.name}: META-INF/LICENSE differs"
        (pom,) = [n for n in jar.namelist() if n.endswith("/pom.xml")]
        project = ET.fromstring(jar.read(pom))
    names = [e.text for e in project.iterfind(f"{POM}licenses/{POM}license/{POM}name")]
    urls = [e.text for e in project.iterfind(f"{POM}licenses/{POM}license/{POM}url")]
    assert names == ["Apache-2.0"] and urls == ["https://www.apache.org/licenses/LICENSE-2.0"], (
        path.name,
        names,
        urls,
    )


def _read(archive: tarfile.TarFile, name: str) -> bytes:
    where = Path(str(archive.name)).name
    try:
        member = archive.extractfile(name)
    except KeyError:
        raise AssertionError(f"{where}: no {name}") from None
    assert member is not None, f"{where}: {name} is not a file"
    with member:
        return member.read()


def check_licences() -> None:
    """Steps 2 and 3 of the module doc."""
    python = DIST / "python"
    for name in ("mnemo_server", "mnemo_client"):
        (wheel,) = python.glob(f"{name}-*.whl")
        check_wheel(wheel, SPDX, LICENCE)
        (sdist,) = python.glob(f"{name}-*.tar.gz")
        check_sdist(sdist)
    (tarball,) = (DIST / "npm").glob("*.tgz")
    check_npm(tarball)
    (jar,) = (DIST / "kotlin").glob("*.jar")
    check_jar(jar)
    print(f"test-dist: both wheels, both sdists, the npm tarball and the jar carry {SPDX}")
    (model,) = python.glob("mnemo_model_*.whl")
    check_wheel(model, "MIT", MODEL_LICENCE)
    print("test-dist: the model's wheel carries the upstream model's licence (MIT)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-build", action="store_true", help="check dist/ as it is")
    if not parser.parse_args().no_build:
        build()
    check_licences()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
