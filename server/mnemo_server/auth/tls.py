"""The server's TLS credentials from PEM files (``--tls-*``).

With ``--tls-client-ca-file`` the server requires a client certificate signed
by one of those CAs (mutual TLS); a client without one cannot complete the
handshake. ``server_credentials`` raises ``TlsConfigError`` (a ``ValueError``)
for a file that is missing, unreadable (a directory) or does not hold what it
should; the message names the file and its flag.
"""

from __future__ import annotations

from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from mnemo_server.auth.files import read_option_file


class TlsConfigError(ValueError):
    """A TLS file is missing, unreadable or not the PEM it should be."""


def _read(path: Path, what: str, flag: str) -> bytes:
    return read_option_file(path, what, flag, TlsConfigError)


def _certificates(path: Path, what: str, flag: str) -> bytes:
    data = _read(path, what, flag)
    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        raise TlsConfigError(f"the {what} {path} ({flag}) holds no PEM certificate") from None
    return data


def _private_key(path: Path) -> bytes:
    data = _read(path, "TLS key file", "--tls-key-file")
    try:
        load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise TlsConfigError(
            f"the TLS key file {path} (--tls-key-file) holds no unencrypted PEM private key"
        ) from None
    return data


def server_credentials(
    cert_file: Path | None, key_file: Path | None, client_ca_file: Path | None = None
) -> grpc.ServerCredentials | None:
    """TLS credentials of a certificate chain and its key (mutual TLS with a
    client CA file), or ``None`` to serve plaintext (no certificate or no key).
    Raises ``TlsConfigError``."""
    if cert_file is None or key_file is None:
        return None
    chain = _certificates(cert_file, "TLS certificate file", "--tls-cert-file")
    key = _private_key(key_file)
    client_ca = None
    if client_ca_file is not None:
        client_ca = _certificates(client_ca_file, "TLS client CA file", "--tls-client-ca-file")
    return grpc.ssl_server_credentials(
        [(key, chain)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )
