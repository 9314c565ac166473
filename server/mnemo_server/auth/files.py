"""Reading the files the security options name (``--jwt-*-file``,
``--tls-*-file``), with an error that tells the operator what to fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def read_option_file(path: Path, what: str, flag: str, error: Callable[[str], ValueError]) -> bytes:
    """The bytes of ``path``, the ``what`` (``"TLS key file"``) that the
    option ``flag`` names.

    A file that is missing or unreadable (a directory, no permission) raises
    ``error(message)``, the caller's ``ValueError`` subclass
    (``AuthConfigError``, ``TlsConfigError``), with a message that names the
    file and its flag and says to give the flag a readable file; nothing else
    is raised.
    """
    try:
        return path.read_bytes()
    except OSError as failure:
        raise error(
            f"cannot read the {what} {path} ({flag}): {failure.strerror}; "
            f"give {flag} a file the server can read"
        ) from None
