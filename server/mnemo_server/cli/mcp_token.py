"""The secret ``mnemo mcp --transport http`` asks every request for.

It lives in a file only its owner may read (``--http-token-file``, default
``$XDG_CONFIG_HOME/mnemo/mcp-http-token``, else ``~/.config/mnemo/...``), so
that the desktop assistant or IDE configured with it keeps working across
restarts. A missing file is created with a fresh random token (256 bits,
URL-safe), mode 0600, in a directory created 0700. An existing file is used
only if it is a regular file of this user that neither group nor others may
read or write, and holds a token of at least ``MIN_TOKEN_CHARS`` characters.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

MIN_TOKEN_CHARS = 32
FILE_NAME = "mcp-http-token"


class TokenFileProblem(Exception):
    """The token file cannot be used as it is; the message says how to fix it."""


def default_token_file(env: Mapping[str, str]) -> Path:
    config = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "mnemo" / FILE_NAME


def load_or_create(path: Path) -> str:
    """The token in ``path``, creating the file first if it does not exist.

    Raises ``TokenFileProblem`` for a file others may read or write, one of
    another user, not a regular file, too short a token, or an I/O error.
    """
    try:
        return _create(path)
    except FileExistsError:
        return _read(path)
    except OSError as error:
        raise TokenFileProblem(f"cannot create {path}: {error.strerror}") from None


def _create(path: Path) -> str:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(token + "\n")
    return token


def _read(path: Path) -> str:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as error:
        raise TokenFileProblem(f"cannot read {path}: {error.strerror}") from None
    with os.fdopen(descriptor, encoding="utf-8") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise TokenFileProblem(f"{path} is not a regular file")
        if found.st_uid != os.getuid():
            raise TokenFileProblem(f"{path} belongs to another user; use a file of your own")
        if found.st_mode & 0o077:
            raise TokenFileProblem(
                f"{path} may be read or written by others (mode "
                f"{stat.S_IMODE(found.st_mode):o}): chmod 600 {path}"
            )
        token = file.read().strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenFileProblem(
            f"{path} holds a token of {len(token)} characters, fewer than {MIN_TOKEN_CHARS}: "
            "remove the file to have a random one made"
        )
    return token
