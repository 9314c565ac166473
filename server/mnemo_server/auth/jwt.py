"""Bearer tokens (JWT) -> ``Caller``, with PyJWT.

The algorithm is decided by the configured key, never by the token
(``auth.keys``): HS256 for a shared secret, RS256 for an RSA public key,
ES256 for a P-256 public key; with a JWKS file, the key the token's ``kid``
header names decides. Only that algorithm is accepted, so ``alg: none`` and
algorithm confusion (an HS256 token "signed" with the RSA public key) are
refused. ``exp``, ``aud`` and ``sub`` are required; ``exp``, ``nbf`` and
``iat`` are checked with a small leeway for clock skew
(``--jwt-leeway-seconds``); ``iss`` is checked when configured.

Claims: ``sub`` is the user id (an id like every other: 1-128 characters of
``A-Za-z0-9._~:-``); the tenant claim (``tenant`` by default) is optional;
the admin role is looked for in a ``roles`` list and in a space-separated
``scope`` string.

``TokenVerifier.verify`` raises ``Unauthenticated`` (reason
``UNAUTHENTICATED``, metadata ``problem``: ``expired``, ``audience``,
``issuer``, ``signature``, ``algorithm``, ``claims``, ``key`` (with a JWKS
file: no ``kid`` header, or a ``kid`` the file does not hold) or
``malformed``); ``load_verifier`` raises ``AuthConfigError`` (a
``ValueError``) for a key file that cannot be used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from mnemo_server.auth.caller import Caller
from mnemo_server.auth.keys import (
    AuthConfigError,
    JwksFile,
    KeySource,
    VerifyingKey,
    public_key_file_key,
    secret_file_key,
)
from mnemo_server.domain.errors import Unauthenticated
from mnemo_server.domain.names import is_valid_id

__all__ = [
    "MAX_TOKEN_CHARS",
    "AuthConfigError",
    "JwtKeyFiles",
    "JwtPolicy",
    "TokenVerifier",
    "load_verifier",
]

MAX_TOKEN_CHARS = 8_192
KID_CACHE_SIZE = 64
"""Header segments whose ``kid`` is remembered (an issuer's tokens share a few)."""


@dataclass(frozen=True)
class JwtPolicy:
    """What a token must be to be accepted, and how its claims are read."""

    audience: str
    issuer: str = ""
    tenant_claim: str = "tenant"
    admin_role: str = "mnemo:admin"
    leeway_seconds: float = 30.0


@dataclass(frozen=True, kw_only=True)
class JwtKeyFiles:
    """Where the verifying keys are (``--jwt-*-file``): one of the three
    files; a JWKS file is re-read every ``jwks_refresh_seconds``."""

    hs256_secret_file: Path | None = None
    public_key_file: Path | None = None
    jwks_file: Path | None = None
    jwks_refresh_seconds: float


def key_source(files: JwtKeyFiles) -> KeySource:
    """The keys of ``files``' one key file. Raises ``AuthConfigError``."""
    if files.hs256_secret_file is not None:
        return secret_file_key(files.hs256_secret_file)
    if files.public_key_file is not None:
        return public_key_file_key(files.public_key_file)
    if files.jwks_file is not None:
        return JwksFile(files.jwks_file, files.jwks_refresh_seconds)
    raise AuthConfigError(
        "--auth jwt needs --jwt-hs256-secret-file, --jwt-public-key-file or --jwt-jwks-file"
    )


def load_verifier(policy: JwtPolicy, files: JwtKeyFiles) -> TokenVerifier:
    """The verifier ``--auth jwt`` asks for (``config.check_security`` has
    checked that exactly one key file and an audience are given). Raises
    ``AuthConfigError`` for a key file that cannot be used."""
    return TokenVerifier(policy, key_source(files))


def _refused(problem: str, detail: str) -> Unauthenticated:
    return Unauthenticated(
        f"the bearer token is not accepted: {detail}",
        metadata={"problem": problem},
        reason="UNAUTHENTICATED",
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
    """Verifies bearer tokens against one ``JwtPolicy`` with the keys of a ``KeySource``."""

    def __init__(self, policy: JwtPolicy, keys: KeySource) -> None:
        self.policy = policy
        self.keys = keys
        required = ["exp", "aud", "sub"] + (["iss"] if policy.issuer else [])
        self._options: Any = {"require": required}
        self._kids: dict[str, str] = {}

    def verify(self, token: str) -> Caller:
        """The caller ``token`` authenticates. Raises ``Unauthenticated``."""
        if len(token) > MAX_TOKEN_CHARS:
            raise _refused("malformed", f"it is longer than {MAX_TOKEN_CHARS} characters")
        policy = self.policy
        try:
            found = self._key_for(token)
            claims = jwt.decode(
                token,
                found.key,
                algorithms=[found.algorithm],
                audience=policy.audience,
                issuer=policy.issuer or None,
                leeway=policy.leeway_seconds,
                options=self._options,
            )
        except jwt.PyJWTError as error:
            raise _problem_of(error) from None
        return self.caller_of(claims)

    def _key_for(self, token: str) -> VerifyingKey:
        """The key ``token`` names. Raises ``Unauthenticated`` (``key``) or a
        ``PyJWTError`` (a header that is not one)."""
        keys = self.keys
        if not keys.selects_by_kid:
            found = keys.find("")
        else:
            found = keys.find(self._kid_of(token))
        if found is None:
            raise _refused(
                "key",
                "its kid names no key this server holds (a key rotated out, or not published "
                "to the server yet)",
            )
        return found

    def _kid_of(self, token: str) -> str:
        """The ``kid`` of ``token``'s header, remembered by header segment (the
        same bytes always name the same kid; ``decode`` checks the header fully
        anyway), which saves decoding the token twice."""
        segment = token.partition(".")[0]
        kid = self._kids.get(segment)
        if kid is not None:
            return kid
        kid = jwt.get_unverified_header(token).get("kid")
        if not isinstance(kid, str) or not kid:
            raise _refused("key", "it has no kid header naming the key that signed it")
        if len(self._kids) >= KID_CACHE_SIZE:
            self._kids.clear()
        self._kids[segment] = kid
        return kid

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
