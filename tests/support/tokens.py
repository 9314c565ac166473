"""JWT signing keys and tokens for tests, made at test time (nothing committed).

    keys = SigningKeys.hs256()            # or .rs256() / .es256()
    settings = keys.server_settings(tmp_path)   # --auth jwt with the verifying key
    metadata = bearer(keys.token("alice", tenant="t1"))

    jwks = JwksKeys.of(SigningKeys.rs256(), SigningKeys.es256())   # kids k0, k1
    jwks.write(path)                     # a JWKS file of their verifying keys
    jwks.token("k1", "alice")            # signed by k1, kid header k1

``forged`` builds tokens PyJWT refuses to make: ``alg: none`` and an HS256
token "signed" with the public key's PEM (algorithm confusion).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

AUDIENCE = "mnemo-test"
ADMIN_ROLE = "mnemo:admin"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(
    sub: str,
    *,
    tenant: str | None = None,
    admin: bool = False,
    audience: str = AUDIENCE,
    expires_in: float = 300,
    **extra: Any,
) -> dict[str, Any]:
    """Claims of a token for ``sub`` (``exp`` ``expires_in`` seconds from now)."""
    now = int(time.time())
    result: dict[str, Any] = {"sub": sub, "aud": audience, "iat": now, "exp": now + expires_in}
    if tenant is not None:
        result["tenant"] = tenant
    if admin:
        result["roles"] = [ADMIN_ROLE]
    result.update(extra)
    return {k: v for k, v in result.items() if v is not None}


@dataclass(frozen=True)
class SigningKeys:
    """A signing key and the file contents that verify it."""

    algorithm: str
    signing_key: Any
    verifying_pem: bytes

    @classmethod
    def hs256(cls) -> SigningKeys:
        secret = secrets.token_urlsafe(48).encode()
        return cls("HS256", secret, secret)

    @classmethod
    def rs256(cls) -> SigningKeys:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls("RS256", key, _public_pem(key))

    @classmethod
    def es256(cls) -> SigningKeys:
        key = ec.generate_private_key(ec.SECP256R1())
        return cls("ES256", key, _public_pem(key))

    @property
    def is_secret(self) -> bool:
        return self.algorithm == "HS256"

    def write(self, directory: Path) -> Path:
        """Write the verifying key (the secret, or the public key PEM) to a file."""
        path = directory / ("jwt.secret" if self.is_secret else "jwt-public.pem")
        path.write_bytes(self.verifying_pem)
        return path

    def server_settings(self, directory: Path, **overrides: Any) -> dict[str, Any]:
        """``Settings`` overrides of a server verifying these keys' tokens."""
        key_field = "jwt_hs256_secret_file" if self.is_secret else "jwt_public_key_file"
        return {
            "auth": "jwt",
            key_field: self.write(directory),
            "jwt_audience": AUDIENCE,
            **overrides,
        }

    def jwk(self, kid: str) -> dict[str, Any]:
        """The verifying key as a JWK (RFC 7517) named ``kid``."""
        if self.is_secret:
            return {"kty": "oct", "kid": kid, "k": _b64(self.verifying_pem)}
        public = self.signing_key.public_key()
        algorithm = (
            jwt.algorithms.RSAAlgorithm if self.algorithm == "RS256" else jwt.algorithms.ECAlgorithm
        )
        jwk: dict[str, Any] = algorithm.to_jwk(public, as_dict=True)
        return {**jwk, "kid": kid, "use": "sig", "alg": self.algorithm}

    def sign(self, payload: dict[str, Any], **headers: Any) -> str:
        return jwt.encode(payload, self.signing_key, algorithm=self.algorithm, headers=headers)

    def token(self, sub: str, **kwargs: Any) -> str:
        """A valid token for ``sub`` (see ``claims`` for the options)."""
        return self.sign(claims(sub, **kwargs))


@dataclass(frozen=True)
class JwksKeys:
    """Signing keys by kid, and the JWKS file of their verifying keys."""

    keys: dict[str, SigningKeys]

    @classmethod
    def of(cls, *keys: SigningKeys) -> JwksKeys:
        """``keys`` as kids ``k0``, ``k1``, ..."""
        return cls({f"k{i}": key for i, key in enumerate(keys)})

    def document(self) -> dict[str, Any]:
        return {"keys": [key.jwk(kid) for kid, key in self.keys.items()]}

    def write(self, path: Path) -> Path:
        """Replace ``path`` with the JWKS (a rename, as a deployment would)."""
        staged = path.with_name(path.name + ".new")
        staged.write_text(json.dumps(self.document()))
        staged.replace(path)
        return path

    def server_settings(self, directory: Path, **overrides: Any) -> dict[str, Any]:
        """``Settings`` overrides of a server verifying with this JWKS file."""
        return {
            "auth": "jwt",
            "jwt_jwks_file": self.write(directory / "jwks.json"),
            "jwt_audience": AUDIENCE,
            **overrides,
        }

    def token(self, kid: str, sub: str, **kwargs: Any) -> str:
        """A valid token for ``sub`` signed by key ``kid`` (named in its header)."""
        return self.keys[kid].sign(claims(sub, **kwargs), kid=kid)


def _public_pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def unsigned(payload: dict[str, Any]) -> str:
    """An ``alg: none`` token (no signature)."""
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(payload).encode())}."


def hs256_with(secret: bytes, payload: dict[str, Any]) -> str:
    """An HS256 token with any bytes as the secret (even a public key's PEM)."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps(payload).encode())
    signature = hmac.new(secret, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"


def bearer(token: str) -> tuple[tuple[str, str]]:
    """gRPC call metadata carrying ``token``."""
    return (("authorization", f"Bearer {token}"),)
