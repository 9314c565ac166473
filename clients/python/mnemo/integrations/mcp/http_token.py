"""The secret the MCP command asks every request for over HTTP
(``mnemo-mcp --transport http``, also ``mnemo mcp``).

It lives in a file only its owner may read (``--http-token-file``, default
``$XDG_CONFIG_HOME/mnemo/mcp-http-token``, else ``~/.config/mnemo/...``), so
that the desktop assistant or IDE configured with it keeps working across
restarts. A missing file is created with a fresh random token (256 bits,
URL-safe), mode 0600, in a directory created 0700. An existing file is used
only if it is a regular file of this user that neither group nor others may
read or write, and holds a token of at least ``MIN_TOKEN_CHARS`` characters.
Anything else (a directory, a symbolic link, a FIFO, binary content, a
directory that cannot be made) is refused with one line naming
``--http-token-file`` and the fix: the command exits 2 with it.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

MIN_TOKEN_CHARS = 32
MAX_FILE_BYTES = 4096
"""A token file longer than this is not one (and is not read whole)."""
FILE_NAME = "mcp-http-token"


class TokenFileProblem(Exception):
    """The token file cannot be used as it is; the message says how to fix it."""


def default_token_file(env: Mapping[str, str]) -> Path:
    config = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "mnemo" / FILE_NAME


def load_or_create(path: Path) -> str:
    """The token in ``path``, creating the file first if it does not exist.

    Raises ``TokenFileProblem`` (one line naming ``--http-token-file`` and the
    fix) for a file others may read or write, one of another user, a
    directory, a symbolic link or anything else that is not a regular file,
    a file that is not text or holds too short a token, a directory that
    cannot be made, or an I/O error.
    """
    _make_directory(path)
    try:
        return _create(path)
    except FileExistsError:
        return _read(path)
    except OSError as error:
        raise TokenFileProblem(
            f"cannot create --http-token-file {path}: {error.strerror}; name a file you may "
            "write with --http-token-file"
        ) from None


def _make_directory(path: Path) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise TokenFileProblem(
            f"cannot create --http-token-file {path}: {path.parent} is not a directory"
        ) from None
    except OSError as error:
        raise TokenFileProblem(
            f"cannot create the directory of --http-token-file {path}: {error.strerror}; "
            "name a file in a directory you may write with --http-token-file"
        ) from None


def _create(path: Path) -> str:
    token = secrets.token_urlsafe(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(token + "\n")
    except OSError:
        path.unlink(missing_ok=True)  # never leave a file without its token behind
        raise
    return token


def _read(path: Path) -> str:
    # O_NONBLOCK: a FIFO is refused below instead of waiting for a writer.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise TokenFileProblem(
                f"--http-token-file {path} is a symbolic link: name the file itself"
            ) from None
        raise TokenFileProblem(
            f"cannot read --http-token-file {path}: {error.strerror}; name a file you may "
            "read, or a missing one to have it made"
        ) from None
    try:
        _check_owned_file(path, os.fstat(descriptor))
        with os.fdopen(os.dup(descriptor), "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise TokenFileProblem(f"cannot read --http-token-file {path}: {error.strerror}") from None
    finally:
        os.close(descriptor)
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        token = "\n"  # not text: refused as such below
    if len(data) > MAX_FILE_BYTES or not token.isprintable():
        raise TokenFileProblem(
            f"--http-token-file {path} does not hold a token (not UTF-8 text of one line): "
            "remove the file to have a random one made"
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenFileProblem(
            f"--http-token-file {path} holds a token of {len(token)} characters, fewer than "
            f"{MIN_TOKEN_CHARS}: remove the file to have a random one made"
        )
    return token


def _check_owned_file(path: Path, found: os.stat_result) -> None:
    """Refuse anything but a regular file of this user that only it may read and write."""
    if stat.S_ISDIR(found.st_mode):
        raise TokenFileProblem(
            f"--http-token-file {path} is a directory: name a file, such as {path / FILE_NAME}"
        )
    if not stat.S_ISREG(found.st_mode):
        raise TokenFileProblem(
            f"--http-token-file {path} is not a regular file: name a regular file, or a "
            "missing one to have it made"
        )
    if found.st_uid != os.getuid():
        raise TokenFileProblem(
            f"--http-token-file {path} belongs to another user; use a file of your own"
        )
    if found.st_mode & 0o077:
        raise TokenFileProblem(
            f"--http-token-file {path} may be read or written by others (mode "
            f"{stat.S_IMODE(found.st_mode):o}): chmod 600 {path}"
        )
