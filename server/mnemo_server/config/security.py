"""Security checks of resolved settings: which addresses are loopback, and the
authentication, TLS and exposure combinations refused at start (each refusal a
``ConfigError`` naming the flags to change)."""

from __future__ import annotations

import ipaddress

from mnemo_server.config.settings import ConfigError, Settings


def listen_host(listen: str) -> str:
    """The host part of ``HOST:PORT`` (``[::1]:1`` -> ``::1``)."""
    return listen.rpartition(":")[0].removeprefix("[").removesuffix("]")


def is_loopback(listen: str) -> bool:
    """Whether ``HOST:PORT`` listens on loopback only (127.0.0.0/8, ::1, localhost)."""
    host = listen_host(listen)
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_security(settings: Settings) -> None:
    """Refuse authentication and TLS settings that do not make sense together.

    ``--auth none`` on an address other than loopback needs
    ``--allow-unauthenticated-non-loopback true``, and so does a
    ``--metrics-listen`` other than loopback whatever ``--auth`` says (the
    metrics port never authenticates). Raises ``ConfigError``
    naming the flags to change (``mnemo serve`` exits 2 with it).
    """
    if settings.auth == "none":
        _check_no_auth(settings)
    else:
        _check_jwt(settings)
    metrics = settings.metrics_listen
    if metrics and not is_loopback(metrics) and not settings.allow_unauthenticated_non_loopback:
        raise ConfigError(
            f"refusing --metrics-listen {metrics}, which is not a loopback address: the "
            "metrics port has no authentication. Use a loopback address, or, if only your "
            "monitoring can reach it, add --allow-unauthenticated-non-loopback true"
        )
    if (settings.tls_cert_file is None) != (settings.tls_key_file is None):
        raise ConfigError("--tls-cert-file and --tls-key-file go together: give both or neither")
    if settings.tls_client_ca_file is not None and settings.tls_cert_file is None:
        raise ConfigError(
            "--tls-client-ca-file (mutual TLS) needs --tls-cert-file and --tls-key-file"
        )


def _check_no_auth(settings: Settings) -> None:
    jwt_given = [
        flag
        for flag, value in (
            ("--jwt-hs256-secret-file", settings.jwt_hs256_secret_file),
            ("--jwt-public-key-file", settings.jwt_public_key_file),
            ("--jwt-jwks-file", settings.jwt_jwks_file),
            ("--jwt-audience", settings.jwt_audience),
            ("--jwt-issuer", settings.jwt_issuer),
        )
        if value
    ]
    if jwt_given:
        raise ConfigError(f"{', '.join(jwt_given)} given but --auth is none: add --auth jwt")
    if not is_loopback(settings.listen) and not settings.allow_unauthenticated_non_loopback:
        raise ConfigError(
            f"refusing --auth none on {settings.listen}, which is not a loopback address: "
            "anyone who can reach it could read and change every user's data. Use --auth jwt "
            "(see docs/operations.md), listen on 127.0.0.1, or, if a proxy in front "
            "authenticates, add --allow-unauthenticated-non-loopback true"
        )
    web = settings.web_listen
    if web and not is_loopback(web) and not settings.allow_unauthenticated_non_loopback:
        raise ConfigError(
            f"refusing --auth none on --web-listen {web}, which is not a loopback address: "
            "use --auth jwt, a loopback address, or --allow-unauthenticated-non-loopback true"
        )
    if web and exposes_every_user(settings) and not settings.allow_unauthenticated_any_origin:
        raise ConfigError(
            "refusing --auth none with --web-cors-origins '*': any web site could read, change "
            "and erase every user's memories through a visitor's browser. Use --auth jwt, list "
            "the page origins in --web-cors-origins, or, if that is really meant, add "
            "--allow-unauthenticated-any-origin true"
        )


def exposes_every_user(settings: Settings) -> bool:
    """Whether any web site may call the web port for any user (``--auth none``
    and ``--web-cors-origins '*'``): refused unless
    ``--allow-unauthenticated-any-origin``, and then warned about at start."""
    return (
        settings.auth == "none" and bool(settings.web_listen) and "*" in settings.web_cors_origins
    )


def _check_jwt(settings: Settings) -> None:
    keys = (settings.jwt_hs256_secret_file, settings.jwt_public_key_file, settings.jwt_jwks_file)
    if sum(key is not None for key in keys) != 1:
        raise ConfigError(
            "--auth jwt needs exactly one of --jwt-hs256-secret-file, --jwt-public-key-file "
            "and --jwt-jwks-file"
        )
    if not settings.jwt_audience:
        raise ConfigError("--auth jwt needs --jwt-audience (the aud every token must carry)")
