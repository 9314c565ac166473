"""Where the keys that verify bearer tokens come from (``--jwt-*-file``).

A key file (``--jwt-hs256-secret-file``, ``--jwt-public-key-file``) holds one
key, whose kind decides the one algorithm accepted (``SingleKey``; a token's
``kid`` is not looked at). A JWKS file (``--jwt-jwks-file``, RFC 7517) holds
several keys, each named by its ``kid``: a token's ``kid`` header selects
the key, and that key's algorithm (its ``alg``, else the one its type
implies) is the only one accepted for the token (``JwksFile``).

``JwksFile`` re-reads the file, so keys rotate without a restart: at most
every ``refresh_seconds`` (when a token is verified), and also when a token
names a ``kid`` it does not know, at most once per ``recheck_seconds`` (so
tokens with made-up kids cannot make it read the file per request). A read
whose bytes are the ones already loaded changes nothing; a file that has
become unreadable or is no longer a usable key set keeps the last good keys
and logs a warning (once per distinct content). Reads are small local file
reads, done on the thread that verifies.

Loading at start raises ``AuthConfigError`` (a ``ValueError``) for a key file
that is missing, unreadable or unusable, and for an HS256 secret shorter than
``MIN_SECRET_BYTES`` or that is a placeholder (``auth.placeholders``: the
Kubernetes manifest's ``replace-with-...`` and the like); the message names the
flag, says how to make a real key, and never contains key material.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from jwt import PyJWK, PyJWTError

from mnemo_server.auth.files import read_option_file
from mnemo_server.auth.placeholders import is_placeholder

MIN_SECRET_BYTES = 32
"""HS256 keys shorter than the hash (256 bits) are refused (RFC 7518 3.2)."""
MIN_RSA_BITS = 2048
JWKS_ALGORITHMS = {"RSA": "RS256", "EC": "ES256", "oct": "HS256"}
"""The one algorithm accepted for each JWK key type (``kty``)."""
RECHECK_SECONDS = 1.0
"""How often at most an unknown ``kid`` makes a ``JwksFile`` look at its file."""

log = logging.getLogger(__name__)


class AuthConfigError(ValueError):
    """A JWT key file is missing, unreadable or of an unusable kind."""


@dataclass(frozen=True, slots=True)
class VerifyingKey:
    """A key and the one algorithm it verifies (``key`` is what PyJWT's
    ``decode`` takes: a secret, a public key object or a ``PyJWK``)."""

    key: Any
    algorithm: str


class KeySource(Protocol):
    """The keys of a verifier: ``find`` the one a token's ``kid`` names."""

    @property
    def selects_by_kid(self) -> bool:
        """Whether a token must name its key with a ``kid`` header."""
        ...

    def find(self, kid: str) -> VerifyingKey | None:
        """The key for ``kid`` (any ``kid`` when not ``selects_by_kid``); ``None``: no such key."""
        ...


def _read(path: Path, what: str, flag: str) -> bytes:
    return read_option_file(path, what, flag, AuthConfigError)


def _check_secret(secret: bytes, what: str, how: str) -> None:
    """Refuse a placeholder (``auth.placeholders``) or a short secret; ``how``
    says how to put a real one where ``what`` is."""
    if is_placeholder(secret):
        raise AuthConfigError(f"{what} is a placeholder, not a secret: {how}")
    if len(secret) < MIN_SECRET_BYTES:
        raise AuthConfigError(
            f"{what} is {len(secret)} bytes; HS256 needs at least {MIN_SECRET_BYTES}: {how}"
        )


def _check_public_key(key: Any, what: str) -> str:
    """The algorithm ``key`` verifies. Raises ``AuthConfigError`` for a weak or other key."""
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise AuthConfigError(f"{what} is an RSA key of {key.key_size} bits; use 2048+")
        return "RS256"
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return "ES256"
    raise AuthConfigError(f"{what} is neither an RSA nor a P-256 (ES256) public key")


class SingleKey:
    """The one key of a key file: every token is verified with it."""

    selects_by_kid = False

    def __init__(self, key: VerifyingKey) -> None:
        self.key = key

    def find(self, kid: str) -> VerifyingKey:
        return self.key


def secret_file_key(path: Path) -> SingleKey:
    """The HS256 secret in ``path`` (surrounding whitespace, such as a final
    newline, is not part of it)."""
    flag = "--jwt-hs256-secret-file"
    secret = _read(path, "JWT secret file", flag).strip()
    how = (
        f"put a random one there, as openssl rand -base64 48 > {path} does (a Kubernetes "
        "Secret's jwt-secret, a compose or systemd secret file: see docs/deployment.md)"
    )
    _check_secret(secret, f"the JWT secret in {path} ({flag})", how)
    return SingleKey(VerifyingKey(secret, "HS256"))


def public_key_file_key(path: Path) -> SingleKey:
    """The PEM public key in ``path`` and the algorithm it verifies."""
    data = _read(path, "JWT public key file", "--jwt-public-key-file")
    try:
        key = load_pem_public_key(data)
    except ValueError:
        raise AuthConfigError(f"{path} is not a PEM public key") from None
    return SingleKey(VerifyingKey(key, _check_public_key(key, f"the key in {path}")))


# ------------------------------------------------------------------ JWKS


def _jwk_key(jwk: Mapping[str, Any], what: str) -> VerifyingKey:
    kty = jwk.get("kty")
    algorithm = JWKS_ALGORITHMS.get(kty) if isinstance(kty, str) else None
    if algorithm is None:
        raise AuthConfigError(f"{what} has kty {kty!r}; use RSA, EC (P-256) or oct")
    stated = jwk.get("alg", algorithm)
    if stated != algorithm:
        raise AuthConfigError(f"{what} has alg {stated!r}; a {kty} key verifies {algorithm} here")
    if kty != "oct" and "d" in jwk:
        raise AuthConfigError(f"{what} holds a private key: publish only its public part")
    try:
        parsed = PyJWK(dict(jwk), algorithm)
    except PyJWTError as error:  # PyJWK's own messages of these checks carry no key data
        raise AuthConfigError(f"{what} is not a usable {kty} key: {error}") from None
    if kty == "oct":
        _check_secret(
            parsed.key, what, "give it a random k, as openssl rand 48 | basenc --base64url makes"
        )
    else:
        _check_public_key(parsed.key, what)
    return VerifyingKey(parsed, algorithm)


def parse_jwks(data: bytes, source: str) -> dict[str, VerifyingKey]:
    """The signing keys of the JWKS document ``data``, by ``kid``.

    Keys whose ``use`` is not ``sig`` (encryption keys) are skipped; every
    other key needs a ``kid`` of its own and must be usable, or the whole
    document is refused (``AuthConfigError``): a typo never silently drops a key.
    """
    try:
        document = json.loads(data)
    except ValueError:
        raise AuthConfigError(f"{source} is not JSON") from None
    listed = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(listed, list):
        raise AuthConfigError(f'{source} is not a JWKS: it needs a "keys" list')
    keys: dict[str, VerifyingKey] = {}
    for index, jwk in enumerate(listed):
        what = f"key {index} of {source}"
        if not isinstance(jwk, dict):
            raise AuthConfigError(f"{what} is not a JSON object")
        if jwk.get("use", "sig") != "sig":
            continue
        kid = jwk.get("kid")
        if not isinstance(kid, str) or not kid:
            raise AuthConfigError(f"{what} has no kid: tokens name their key by kid")
        if kid in keys:
            raise AuthConfigError(f"{what} repeats kid {kid!r}")
        keys[kid] = _jwk_key(jwk, f"key {kid!r} of {source}")
    if not keys:
        raise AuthConfigError(f"{source} holds no signing key")
    return keys


class JwksFile:
    """The keys of a JWKS file, re-read when it changes (see the module docstring)."""

    selects_by_kid = True

    def __init__(
        self,
        path: Path,
        refresh_seconds: float,
        *,
        recheck_seconds: float = RECHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Load ``path``. Raises ``AuthConfigError`` when it is not a usable key set."""
        self.path = path
        self._refresh = refresh_seconds
        self._recheck = min(recheck_seconds, refresh_seconds)
        self._clock = clock
        data = _read(path, "JWKS file", "--jwt-jwks-file")
        self._keys = parse_jwks(data, str(path))
        self._digest = self._refused = hashlib.sha256(data).digest()
        self._read_at = clock()
        self.reloads = 0
        """How many times new keys were loaded after the first (for tests and logs)."""

    @property
    def kids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def find(self, kid: str) -> VerifyingKey | None:
        now = self._clock()
        if now - self._read_at >= self._refresh:
            self._reload(now)
        found = self._keys.get(kid)
        if found is None and now - self._read_at >= self._recheck:
            self._reload(now)
            found = self._keys.get(kid)
        return found

    def _reload(self, now: float) -> None:
        self._read_at = now
        try:
            data = self.path.read_bytes()
        except OSError as error:
            self._warn(b"unreadable", f"cannot read it ({error.strerror})")
            return
        digest = hashlib.sha256(data).digest()
        if digest == self._digest:
            self._refused = digest
            return
        try:
            keys = parse_jwks(data, str(self.path))
        except AuthConfigError as error:
            self._warn(digest, str(error))
            return
        self._keys, self._digest, self._refused = keys, digest, digest
        self.reloads += 1
        log.info("JWKS %s reloaded: kids %s", self.path, ", ".join(sorted(keys)))

    def _warn(self, refused: bytes, problem: str) -> None:
        """Log ``problem`` unless it is about the ``refused`` content warned of last."""
        if refused == self._refused:
            return
        self._refused = refused
        log.warning(
            "JWKS %s not reloaded, keeping the %d keys loaded before: %s",
            self.path,
            len(self._keys),
            problem,
        )
