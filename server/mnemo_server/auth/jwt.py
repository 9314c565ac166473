"""Bearer tokens (JWT) -> ``Caller``, with PyJWT.

The algorithm is decided by the configured key, never by the token: HS256 for
a shared secret, RS256 for an RSA public key, ES256 for a P-256 public key.
Only that algorithm is accepted, so ``alg: none`` and algorithm confusion
(an HS256 token "signed" with the RSA public key) are refused. ``exp``,
``aud`` and ``sub`` are required; ``exp``, ``nbf`` and ``iat`` are checked
with a small leeway for clock skew; ``iss`` is checked when configured.

Claims: ``sub`` is the user id (an id like every other: 1-128 characters of
``A-Za-z0-9._~:-``); the tenant claim (``tenant`` by default) is optional;
the admin role is looked for in a ``roles`` list and in a space-separated
``scope`` string.

``TokenVerifier.verify`` raises ``Unauthenticated`` (reason
``UNAUTHENTICATED``, metadata ``problem``: ``expired``, ``audience``,
``issuer``, ``signature``, ``algorithm``, ``claims`` or ``malformed``);
``load_verifier`` raises ``AuthConfigError`` (a ``ValueError``) for a key file
that cannot be used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from mnemo_server.api.names import is_valid_id
from mnemo_server.auth.caller import Caller
from mnemo_server.config import Settings
from mnemo_server.domain.errors import Unauthenticated

LEEWAY = timedelta(seconds=30)
MIN_SECRET_BYTES = 32
"""HS256 keys shorter than the hash (256 bits) are refused (RFC 7518 3.2)."""
MIN_RSA_BITS = 2048
MAX_TOKEN_CHARS = 8_192


class AuthConfigError(ValueError):
    """A JWT key file is missing, unreadable or of an unusable kind."""


@dataclass(frozen=True)
class JwtPolicy:
    """What a token must be to be accepted, and how its claims are read."""

    algorithm: str
    key: Any
    audience: str
    issuer: str = ""
    tenant_claim: str = "tenant"
    admin_role: str = "mnemo:admin"


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise AuthConfigError(f"cannot read the {what} {path}: {error.strerror}") from None


def read_secret(path: Path) -> bytes:
    """The HS256 secret in ``path`` (surrounding whitespace, such as a final
    newline, is not part of it)."""
    secret = _read(path, "JWT secret file").strip()
    if len(secret) < MIN_SECRET_BYTES:
        raise AuthConfigError(
            f"the JWT secret in {path} is {len(secret)} bytes; HS256 needs at least "
            f"{MIN_SECRET_BYTES} (for example: openssl rand -base64 48 > {path.name})"
        )
    return secret


def public_key_and_algorithm(path: Path) -> tuple[Any, str]:
    """The PEM public key in ``path`` and the algorithm it verifies."""
    data = _read(path, "JWT public key file")
    try:
        key = load_pem_public_key(data)
    except ValueError:
        raise AuthConfigError(f"{path} is not a PEM public key") from None
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise AuthConfigError(f"the RSA key in {path} has {key.key_size} bits; use 2048+")
        return key, "RS256"
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return key, "ES256"
    raise AuthConfigError(f"{path} holds neither an RSA nor a P-256 (ES256) public key")


def load_verifier(settings: Settings) -> TokenVerifier:
    """The verifier ``--auth jwt`` asks for (``config.check_security`` has
    checked that exactly one key file and an audience are given)."""
    if settings.jwt_hs256_secret_file is not None:
        key: Any = read_secret(settings.jwt_hs256_secret_file)
        algorithm = "HS256"
    elif settings.jwt_public_key_file is not None:
        key, algorithm = public_key_and_algorithm(settings.jwt_public_key_file)
    else:
        raise AuthConfigError("--auth jwt needs --jwt-hs256-secret-file or --jwt-public-key-file")
    return TokenVerifier(
        JwtPolicy(
            algorithm=algorithm,
            key=key,
            audience=settings.jwt_audience,
            issuer=settings.jwt_issuer,
            tenant_claim=settings.jwt_tenant_claim,
            admin_role=settings.jwt_admin_role,
        )
    )


def _refused(problem: str, detail: str) -> Unauthenticated:
    return Unauthenticated(
        f"the bearer token is not accepted: {detail}", metadata={"problem": problem}
    )


# Most specific first: several of these subclass others.
_PROBLEMS: tuple[tuple[type[jwt.PyJWTError], str, str], ...] = (
    (jwt.ExpiredSignatureError, "expired", "it has expired"),
    (jwt.InvalidAudienceError, "audience", "it is not meant for this service (aud)"),
    (jwt.InvalidIssuerError, "issuer", "it is not from the expected issuer (iss)"),
    (jwt.MissingRequiredClaimError, "claims", "a required claim is missing"),
    (jwt.InvalidAlgorithmError, "algorithm", "its algorithm is not the one configured"),
    (jwt.InvalidSignatureError, "signature", "its signature does not verify"),
    (jwt.ImmatureSignatureError, "claims", "it is not valid yet (nbf/iat)"),
    (jwt.InvalidIssuedAtError, "claims", "its iat claim is invalid"),
    (jwt.exceptions.InvalidSubjectError, "claims", "sub must be a user id"),
    (jwt.exceptions.InvalidJTIError, "claims", "its jti claim is invalid"),
    (jwt.InvalidKeyError, "signature", "its signature does not verify"),
)


def _problem_of(error: jwt.PyJWTError) -> Unauthenticated:
    for kind, problem, detail in _PROBLEMS:
        if isinstance(error, kind):
            return _refused(problem, detail)
    return _refused("malformed", "it is not a well-formed JWT")


class TokenVerifier:
    """Verifies bearer tokens against one ``JwtPolicy``."""

    def __init__(self, policy: JwtPolicy) -> None:
        self.policy = policy
        required = ["exp", "aud", "sub"] + (["iss"] if policy.issuer else [])
        self._options: Any = {"require": required}

    def verify(self, token: str) -> Caller:
        """The caller ``token`` authenticates. Raises ``Unauthenticated``."""
        if len(token) > MAX_TOKEN_CHARS:
            raise _refused("malformed", f"it is longer than {MAX_TOKEN_CHARS} characters")
        policy = self.policy
        try:
            claims = jwt.decode(
                token,
                policy.key,
                algorithms=[policy.algorithm],
                audience=policy.audience,
                issuer=policy.issuer or None,
                leeway=LEEWAY,
                options=self._options,
            )
        except jwt.PyJWTError as error:
            raise _problem_of(error) from None
        return self.caller_of(claims)

    def caller_of(self, claims: Mapping[str, Any]) -> Caller:
        """The ``Caller`` of verified ``claims``. Raises ``Unauthenticated``
        (``claims``) for a subject or tenant that is not a valid id."""
        subject = claims.get("sub")
        if not isinstance(subject, str) or not is_valid_id(subject):
            raise _refused("claims", "sub must be a user id (1-128 characters of A-Za-z0-9._~:-)")
        tenant = claims.get(self.policy.tenant_claim, "")
        if not isinstance(tenant, str) or (tenant and not is_valid_id(tenant)):
            raise _refused(
                "claims", f"{self.policy.tenant_claim} must be a tenant id like a user id"
            )
        return Caller(user_id=subject, tenant_id=tenant, admin=self._is_admin(claims))

    def _is_admin(self, claims: Mapping[str, Any]) -> bool:
        role = self.policy.admin_role
        roles = claims.get("roles")
        if isinstance(roles, list) and role in roles:
            return True
        scope = claims.get("scope")
        return isinstance(scope, str) and role in scope.split()
