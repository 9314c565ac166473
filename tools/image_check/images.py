"""The images: the Debian base made here when missing, Mnemo's image built from
``deploy/Dockerfile`` on it (its size checked), and the stand-ins of the
official postgres and nginx images (``standins/``), which this machine cannot
pull, built on the same base from Debian's packages."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from tools.image_check.common import CheckFailed, Podman, say

BASE = "localhost/debian:bookworm-slim"
IMAGE = "localhost/mnemo:0.1.0"
STANDINS = {"postgres": "localhost/postgres:15", "nginx": "localhost/nginx:1.22"}
MAX_IMAGE_BYTES = 400 * 1000 * 1000  # 400 MB, as podman counts them
MIRROR = "http://deb.debian.org/debian"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
BUILD_TIMEOUT_S = 1500.0

# What the official slim images leave out of every package (debuerreotype's
# "slimify"), so that the base is the size of debian:bookworm-slim.
_DPKG_SLIM = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
"""
_SOURCES = f"""\
Types: deb
URIs: {MIRROR}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def _slim(root: Path) -> None:
    """Leave out of ``root`` what the official slim image leaves out."""
    (root / "etc" / "dpkg" / "dpkg.cfg.d" / "docker-slim").write_text(_DPKG_SLIM)
    share = root / "usr" / "share"
    for name in ("man", "groff", "info", "lintian", "linda", "locale"):
        for entry in (share / name).glob("*"):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    for entry in (share / "doc").rglob("*"):
        if entry.name != "copyright" and (entry.is_file() or entry.is_symlink()):
            entry.unlink()
    for cache in (root / "var" / "cache" / "apt").rglob("*"):
        if cache.is_file() and (cache.suffix in (".deb", ".bin")):
            cache.unlink()
    for listed in (root / "var" / "lib" / "apt" / "lists").glob("*"):
        if listed.is_file():
            listed.unlink()
    (root / "etc" / "apt" / "sources.list").unlink(missing_ok=True)
    (root / "etc" / "apt" / "sources.list.d" / "debian.sources").write_text(_SOURCES)


def ensure_base(podman: Podman) -> None:
    """``localhost/debian:bookworm-slim`` from Debian's packages, when missing."""
    if podman.exists("image", BASE):
        say(f"base {BASE}: present")
        return
    say(f"base {BASE}: debootstrap --variant=minbase bookworm from {MIRROR}")
    with tempfile.TemporaryDirectory(prefix="mnemo-base-") as scratch:
        root = Path(scratch) / "root"
        podman.run(
            "--variant=minbase", "bookworm", str(root), MIRROR,
            program=("debootstrap",), timeout=BUILD_TIMEOUT_S,
        )  # fmt: skip
        _slim(root)
        tar = subprocess.run(
            ["tar", "-C", str(root), "-c", "."], capture_output=True, check=True, timeout=600
        )
        podman.run("import", "--change", 'CMD ["bash"]', "-", BASE, stdin=tar.stdout)
    say(f"base {BASE}: {_size(podman, BASE) / 1e6:.1f} MB")


def _size(podman: Podman, image: str) -> int:
    return int(podman.output("image", "inspect", "--format", "{{.Size}}", image))


def build_image(podman: Podman) -> int:
    """Build ``deploy/Dockerfile`` as ``IMAGE``; its size in bytes."""
    if not HOST_CA.is_file():
        raise CheckFailed(f"no CA bundle at {HOST_CA} for pip inside the build")
    say(f"building {IMAGE} from deploy/Dockerfile on {BASE}")
    podman.run(
        "build",
        "--format", "docker",  # keeps HEALTHCHECK (the OCI format has none)
        "--network", "host",
        "--build-arg", f"BASE_IMAGE={BASE}",
        "--volume", f"{HOST_CA}:/run/host-ca.crt:ro",
        "--env", "PIP_CERT=/run/host-ca.crt",
        "--file", "deploy/Dockerfile",
        "--tag", IMAGE,
        ".",
        timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    size = _size(podman, IMAGE)
    say(f"{IMAGE}: {size / 1e6:.1f} MB (at most {MAX_IMAGE_BYTES / 1e6:.0f} MB)")
    if size > MAX_IMAGE_BYTES:
        raise CheckFailed(f"{IMAGE} is {size / 1e6:.1f} MB, over {MAX_IMAGE_BYTES / 1e6:.0f} MB")
    return size


def build_standins(podman: Podman) -> None:
    """The stand-ins of ``postgres:15`` and ``nginx:1.22`` (``standins/``)."""
    for name, tag in STANDINS.items():
        say(f"building the stand-in {tag} from Debian's packages")
        podman.run(
            "build",
            "--network", "host",
            "--build-arg", f"BASE_IMAGE={BASE}",
            "--tag", tag,
            str(Path(__file__).with_name("standins") / name),
            timeout=BUILD_TIMEOUT_S,
        )  # fmt: skip
