"""JWKS key sets (``auth.keys.JwksFile``) and the clock-skew leeway, without a server.

The file is real; the clock is a counter the test moves (no sleeping), so the
re-read rules are checked exactly: every ``refresh_seconds``, and for an
unknown kid at most once per ``recheck_seconds``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from mnemo_server.app import jwt_verifier
from mnemo_server.auth.jwt import JwtPolicy, TokenVerifier
from mnemo_server.auth.keys import AuthConfigError, JwksFile, parse_jwks
from mnemo_server.config import Settings
from mnemo_server.domain.errors import Unauthenticated
from tests.support.tokens import AUDIENCE, JwksKeys, SigningKeys, claims


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _problem(verifier: TokenVerifier, token: str) -> str:
    with pytest.raises(Unauthenticated) as raised:
        verifier.verify(token)
    assert raised.value.reason == "UNAUTHENTICATED"
    return raised.value.metadata["problem"]


def _verifier(path: Path, clock: Clock, refresh: float = 10.0) -> TokenVerifier:
    return TokenVerifier(JwtPolicy(audience=AUDIENCE), JwksFile(path, refresh, clock=clock))


def test_the_kid_selects_the_key_and_its_algorithm(tmp_path: Path) -> None:
    jwks = JwksKeys.of(SigningKeys.rs256(), SigningKeys.es256(), SigningKeys.hs256())
    settings = dataclasses.replace(Settings(), **jwks.server_settings(tmp_path))
    verifier = jwt_verifier(settings)
    for kid in ("k0", "k1", "k2"):
        assert verifier.verify(jwks.token(kid, "alice", tenant="t1")).user_id == "alice", kid
    rs256, es256 = jwks.keys["k0"], jwks.keys["k1"]
    assert _problem(verifier, rs256.sign(claims("alice"))) == "key"  # no kid header
    assert _problem(verifier, rs256.sign(claims("alice"), kid="k9")) == "key"
    # Signed by one key, naming another of the same or of another algorithm.
    assert _problem(verifier, SigningKeys.rs256().sign(claims("a"), kid="k0")) == "signature"
    assert _problem(verifier, es256.sign(claims("alice"), kid="k0")) == "algorithm"
    assert _problem(verifier, "not.a.jwt") == "malformed"


def test_a_rotation_is_picked_up_without_a_restart(tmp_path: Path) -> None:
    old, new = SigningKeys.rs256(), SigningKeys.es256()
    path = JwksKeys({"old": old}).write(tmp_path / "jwks.json")
    clock = Clock()
    verifier = _verifier(path, clock)
    by_old = old.sign(claims("alice"), kid="old")
    by_new = new.sign(claims("alice"), kid="new")
    assert verifier.verify(by_old).user_id == "alice"

    JwksKeys({"old": old, "new": new}).write(path)  # step 1: publish the new key
    clock.now += 0.5  # an unknown kid looks at the file at most once a second
    assert _problem(verifier, by_new) == "key"
    clock.now += 0.5
    assert verifier.verify(by_new).user_id == "alice"
    assert verifier.verify(by_old).user_id == "alice"

    JwksKeys({"new": new}).write(path)  # step 2: retire the old key
    clock.now += 9.9  # a known kid does not make it look before refresh_seconds
    assert verifier.verify(by_old).user_id == "alice"
    clock.now += 0.1
    assert _problem(verifier, by_old) == "key"
    assert verifier.verify(by_new).user_id == "alice"
    keys = verifier.keys
    assert isinstance(keys, JwksFile) and (keys.kids, keys.reloads) == (("new",), 2)


def test_a_file_that_turns_bad_keeps_the_last_good_keys(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = SigningKeys.es256()
    path = JwksKeys({"k": keys}).write(tmp_path / "jwks.json")
    clock = Clock()
    verifier = _verifier(path, clock, refresh=1.0)
    token = keys.sign(claims("alice"), kid="k")
    with caplog.at_level(logging.WARNING, logger="mnemo_server.auth.keys"):
        for bad in (b'{"keys": [', b'{"keys": []}', None):
            if bad is None:
                path.unlink()
            else:
                path.write_bytes(bad)
            for _ in range(2):  # the same bad content is warned of once
                clock.now += 1.0
                assert verifier.verify(token).user_id == "alice"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3, warnings
    assert all("keeping the 1 keys loaded before" in w for w in warnings)
    expected = ("is not JSON", "holds no signing key", "cannot read")
    for warning, problem in zip(warnings, expected, strict=True):
        assert problem in warning, warning
    other = SigningKeys.rs256()
    JwksKeys({"k2": other}).write(path)
    clock.now += 1.0
    assert verifier.verify(other.sign(claims("bob"), kid="k2")).user_id == "bob"
    assert _problem(verifier, token) == "key"


def _rsa_jwk(bits: int = 2048, **extra: Any) -> dict[str, Any]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), **extra}


def test_unusable_key_sets_are_refused_with_the_reason(tmp_path: Path) -> None:
    good = _rsa_jwk(kid="a")
    p384 = ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP384R1()).public_key(), as_dict=True)
    private = RSAAlgorithm.to_jwk(
        rsa.generate_private_key(public_exponent=65537, key_size=2048), as_dict=True
    )
    cases: dict[str, Any] = {
        "is not JSON": "{",
        'needs a "keys" list': {"kid": "a"},
        "holds no signing key": {"keys": [{**good, "use": "enc"}]},
        "is not a JSON object": {"keys": ["a"]},
        "has no kid": {"keys": [{**good, "kid": ""}]},
        "repeats kid 'a'": {"keys": [good, good]},
        "kty 'OKP'": {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AA", "kid": "a"}]},
        "alg 'RS512'": {"keys": [{**good, "alg": "RS512"}]},
        "alg 'none'": {"keys": [{"kty": "oct", "k": "A" * 60, "alg": "none", "kid": "a"}]},
        "private key": {"keys": [{**private, "kid": "a"}]},
        "1024 bits": {"keys": [_rsa_jwk(1024, kid="a")]},
        "P-256": {"keys": [{**p384, "kid": "a"}]},
        "HS256 needs at least 32": {"keys": [{"kty": "oct", "k": "c2hvcnQ", "kid": "a"}]},
        "not a usable RSA key": {"keys": [{"kty": "RSA", "kid": "a", "n": "AQAB"}]},
    }
    for expected, document in cases.items():
        data = (document if isinstance(document, str) else json.dumps(document)).encode()
        with pytest.raises(AuthConfigError, match=expected) as raised:
            parse_jwks(data, "jwks.json")
        assert "AAAAAAAA" not in str(raised.value)  # never any key material
    kept = parse_jwks(json.dumps({"keys": [good, {**good, "kid": "e", "use": "enc"}]}).encode(), "")
    assert list(kept) == ["a"]
    with pytest.raises(AuthConfigError, match="cannot read the JWKS file"):
        JwksFile(tmp_path / "missing.json", 10.0)


@pytest.mark.parametrize("claim", ["exp", "nbf"])
def test_the_leeway_is_configurable(claim: str, tmp_path: Path) -> None:
    keys = SigningKeys.hs256()
    settings = dataclasses.replace(
        Settings(), **keys.server_settings(tmp_path, jwt_leeway_seconds=5.0)
    )
    verifier = jwt_verifier(settings)
    now = claims("alice")["iat"]
    # exp in the past, or nbf in the future, by less and by more than the leeway.
    sign = -1 if claim == "exp" else 1
    within = keys.sign({**claims("alice"), claim: now + sign * 3})
    beyond = keys.sign({**claims("alice"), claim: now + sign * 20})
    assert verifier.verify(within).user_id == "alice"
    assert _problem(verifier, beyond) == ("expired" if claim == "exp" else "claims")
