"""TLS and mutual TLS through a real server, with a throwaway CA made at test time.

A client that verifies the server against the CA is served; one that trusts
another CA cannot connect; under mutual TLS a client without a certificate,
or with one of another CA, cannot connect either.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from mnemo.v1 import working_memory_pb2 as wm
from mnemo.v1 import working_memory_pb2_grpc
from tests.support.certificates import CertificateAuthority, Issued
from tests.support.server import running_server

# Connection failures are quick (the handshake fails); this only bounds a hang.
TIMEOUT_S = 10


@dataclass(frozen=True)
class Pki:
    ca: CertificateAuthority
    server: Issued
    client: Issued
    stranger_ca: CertificateAuthority
    stranger: Issued


@pytest.fixture(scope="module")
def pki() -> Pki:
    ca, stranger_ca = CertificateAuthority("Mnemo test CA"), CertificateAuthority("Another CA")
    return Pki(
        ca=ca,
        server=ca.issue("localhost", server=True),
        client=ca.issue("client-1"),
        stranger_ca=stranger_ca,
        stranger=stranger_ca.issue("client-2"),
    )


def _tls_settings(pki: Pki, directory: Path, *, mutual: bool) -> dict[str, Path]:
    cert, key = pki.server.write(directory, "server")
    settings = {"tls_cert_file": cert, "tls_key_file": key}
    if mutual:
        settings["tls_client_ca_file"] = pki.ca.write(directory)
    return settings


@pytest.fixture
def tls_server(pki: Pki, database_url: str, tmp_path: Path) -> Iterator[str]:
    with running_server(database_url, **_tls_settings(pki, tmp_path, mutual=False)) as target:
        yield target


@pytest.fixture
def mtls_server(pki: Pki, database_url: str, tmp_path: Path) -> Iterator[str]:
    with running_server(database_url, **_tls_settings(pki, tmp_path, mutual=True)) as target:
        yield target


def _call(target: str, credentials: grpc.ChannelCredentials) -> grpc.StatusCode:
    with grpc.secure_channel(target, credentials) as channel:
        stub = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
        try:
            stub.GetMemoryState(
                wm.GetMemoryStateRequest(name="users/alice/memoryState"), timeout=TIMEOUT_S
            )
        except grpc.RpcError as error:
            code: grpc.StatusCode = error.code()
            return code
    return grpc.StatusCode.OK


def _trusting(ca: CertificateAuthority, client: Issued | None = None) -> grpc.ChannelCredentials:
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=ca.cert_pem)
    return grpc.ssl_channel_credentials(
        root_certificates=ca.cert_pem,
        private_key=client.key_pem,
        certificate_chain=client.cert_pem,
    )


def test_a_client_verifying_the_server_against_the_ca_is_served(pki: Pki, tls_server: str) -> None:
    assert _call(tls_server, _trusting(pki.ca)) is grpc.StatusCode.OK


def test_a_client_trusting_another_ca_cannot_connect(pki: Pki, tls_server: str) -> None:
    assert _call(tls_server, _trusting(pki.stranger_ca)) is grpc.StatusCode.UNAVAILABLE


def test_a_plaintext_client_cannot_talk_to_a_tls_server(tls_server: str) -> None:
    with grpc.insecure_channel(tls_server) as channel:
        stub = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
        with pytest.raises(grpc.RpcError) as raised:
            stub.GetMemoryState(
                wm.GetMemoryStateRequest(name="users/alice/memoryState"), timeout=TIMEOUT_S
            )
    assert raised.value.code() is grpc.StatusCode.UNAVAILABLE


def test_mutual_tls_serves_a_client_with_a_certificate_of_the_ca(
    pki: Pki, mtls_server: str
) -> None:
    assert _call(mtls_server, _trusting(pki.ca, pki.client)) is grpc.StatusCode.OK


def test_mutual_tls_refuses_a_client_without_a_certificate(pki: Pki, mtls_server: str) -> None:
    assert _call(mtls_server, _trusting(pki.ca)) is grpc.StatusCode.UNAVAILABLE


def test_mutual_tls_refuses_a_certificate_of_another_ca(pki: Pki, mtls_server: str) -> None:
    assert _call(mtls_server, _trusting(pki.ca, pki.stranger)) is grpc.StatusCode.UNAVAILABLE
