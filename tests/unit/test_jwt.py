"""Token verification (``auth.jwt``) without a server: algorithms, claims, key files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mnemo_server.app import jwt_verifier
from mnemo_server.auth.caller import Caller
from mnemo_server.auth.jwt import MAX_TOKEN_CHARS, AuthConfigError, TokenVerifier
from mnemo_server.config import Settings
from mnemo_server.domain.errors import Unauthenticated
from tests.support.tokens import AUDIENCE, SigningKeys, claims, hs256_with, unsigned


def _verifier(keys: SigningKeys, tmp_path: Path, **overrides: object) -> TokenVerifier:
    settings = dataclasses.replace(Settings(), **keys.server_settings(tmp_path, **overrides))
    return jwt_verifier(settings)


def _problem(verifier: TokenVerifier, token: str) -> str:
    with pytest.raises(Unauthenticated) as raised:
        verifier.verify(token)
    assert raised.value.reason == "UNAUTHENTICATED"
    return raised.value.metadata["problem"]


@pytest.mark.parametrize(
    ("make_keys", "algorithm"),
    [(SigningKeys.hs256, "HS256"), (SigningKeys.rs256, "RS256"), (SigningKeys.es256, "ES256")],
)
def test_the_key_decides_the_algorithm(make_keys: object, algorithm: str, tmp_path: Path) -> None:
    keys: SigningKeys = make_keys()  # type: ignore[operator]
    verifier = _verifier(keys, tmp_path)
    assert verifier.keys.find("").algorithm == algorithm  # type: ignore[union-attr]
    assert verifier.verify(keys.token("alice", tenant="t1")) == Caller("alice", "t1", False)


def test_claims_become_the_caller(tmp_path: Path) -> None:
    keys = SigningKeys.hs256()
    verifier = _verifier(keys, tmp_path, jwt_tenant_claim="org", jwt_admin_role="ops")
    assert verifier.verify(keys.token("svc", org="acme", roles=["ops"])) == Caller(
        "svc", "acme", True
    )
    assert verifier.verify(keys.token("svc", scope="read ops")).admin
    assert not verifier.verify(keys.token("svc", scope="operations", roles="ops")).admin
    assert verifier.verify(keys.token("u", tenant="ignored")).tenant_id == ""


def test_every_kind_of_bad_token_names_its_problem(tmp_path: Path) -> None:
    keys = SigningKeys.rs256()
    verifier = _verifier(keys, tmp_path, jwt_issuer="https://issuer")
    good = claims("alice", iss="https://issuer")
    assert verifier.verify(keys.sign(good)).user_id == "alice"
    cases = {
        "expired": keys.sign({**good, "exp": good["iat"] - 120}),
        "audience": keys.sign({**good, "aud": "other"}),
        "issuer": keys.sign({**good, "iss": "https://other"}),
        "algorithm": unsigned(good),
        "signature": SigningKeys.rs256().sign(good),
        "claims": keys.sign({k: v for k, v in good.items() if k != "iss"}),
        "malformed": "x" * (MAX_TOKEN_CHARS + 1),
    }
    for problem, token in cases.items():
        assert _problem(verifier, token) == problem, problem
    assert _problem(verifier, hs256_with(keys.verifying_pem, good)) == "algorithm"


def test_a_small_clock_skew_is_tolerated(tmp_path: Path) -> None:
    keys = SigningKeys.hs256()
    verifier = _verifier(keys, tmp_path)
    assert verifier.verify(keys.token("alice", expires_in=-10)).user_id == "alice"
    assert _problem(verifier, keys.token("alice", expires_in=-60)) == "expired"


def test_audience_may_be_one_of_a_list(tmp_path: Path) -> None:
    keys = SigningKeys.hs256()
    verifier = _verifier(keys, tmp_path)
    assert verifier.verify(keys.sign({**claims("a"), "aud": ["x", AUDIENCE]})).user_id == "a"


def test_unusable_key_files_are_refused_with_the_reason(tmp_path: Path) -> None:
    short = tmp_path / "short.secret"
    short.write_bytes(b"too short\n")
    small_rsa = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    other_curve = ec.generate_private_key(ec.SECP384R1())
    pems = {
        "rsa1024.pem": small_rsa.public_key(),
        "p384.pem": other_curve.public_key(),
    }
    for name, key in pems.items():
        (tmp_path / name).write_bytes(
            key.public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    (tmp_path / "garbage.pem").write_text("not a key")
    base = dataclasses.replace(Settings(), auth="jwt", jwt_audience=AUDIENCE)
    cases = {
        "at least 32": dataclasses.replace(base, jwt_hs256_secret_file=short),
        "cannot read": dataclasses.replace(base, jwt_hs256_secret_file=tmp_path / "missing"),
        "2048": dataclasses.replace(base, jwt_public_key_file=tmp_path / "rsa1024.pem"),
        "P-256": dataclasses.replace(base, jwt_public_key_file=tmp_path / "p384.pem"),
        "not a PEM": dataclasses.replace(base, jwt_public_key_file=tmp_path / "garbage.pem"),
    }
    for expected, settings in cases.items():
        with pytest.raises(AuthConfigError, match=expected):
            jwt_verifier(settings)


def test_a_trailing_newline_is_not_part_of_the_secret(tmp_path: Path) -> None:
    keys = SigningKeys.hs256()
    path = keys.write(tmp_path)
    path.write_bytes(keys.verifying_pem + b"\n")
    settings = dataclasses.replace(
        Settings(), auth="jwt", jwt_hs256_secret_file=path, jwt_audience=AUDIENCE
    )
    assert jwt_verifier(settings).verify(keys.token("alice")).user_id == "alice"
