"""The authentication, TLS and limit settings, and the loopback rule of ``--auth none``.

The refusal is checked on the configuration itself: no test ever binds an
address other than loopback.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from mnemo_server.app import admission_of
from mnemo_server.cli.main import build_parser
from mnemo_server.config import ConfigError, Settings, is_loopback, resolve
from mnemo_server.store.composed import SqlStore


def _settings(argv: list[str], env: dict[str, str] | None = None) -> Settings:
    return resolve(vars(build_parser().parse_args(["serve", *argv])), env or {})


@pytest.mark.parametrize(
    ("listen", "loopback"),
    [
        ("127.0.0.1:50051", True),
        ("127.1.2.3:1", True),
        ("localhost:50051", True),
        ("[::1]:50051", True),
        ("0.0.0.0:50051", False),
        ("[::]:50051", False),
        ("10.0.0.5:50051", False),
        ("mnemo.internal:50051", False),
    ],
)
def test_loopback_addresses(listen: str, loopback: bool) -> None:
    assert is_loopback(listen) is loopback


def test_no_authentication_on_a_non_loopback_address_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"refusing --auth none on 0\.0\.0\.0:50051.*--auth jwt"):
        _settings(["--listen", "0.0.0.0:50051"])
    with pytest.raises(ConfigError, match="not a loopback"):
        _settings([], {"MNEMO_LISTEN": "[::]:50051"})


def test_the_explicit_override_allows_it_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    settings = _settings(
        ["--listen", "0.0.0.0:50051", "--allow-unauthenticated-non-loopback", "true"]
    )
    assert settings.auth == "none" and settings.allow_unauthenticated_non_loopback
    store: SqlStore = None  # type: ignore[assignment]  # not used without jwt
    with caplog.at_level(logging.WARNING, logger="mnemo"):
        admission = admission_of(settings, store)
    assert not admission.active
    assert "WITHOUT authentication on 0.0.0.0:50051" in caplog.text


def test_jwt_settings(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    settings = _settings(
        ["--auth", "jwt", "--jwt-hs256-secret-file", str(secret), "--jwt-audience", "mnemo"],
        {"MNEMO_LISTEN": "0.0.0.0:1"},
    )
    assert (settings.auth, settings.jwt_hs256_secret_file, settings.jwt_audience) == (
        "jwt",
        secret,
        "mnemo",
    )
    assert (settings.jwt_tenant_claim, settings.jwt_admin_role) == ("tenant", "mnemo:admin")
    assert (settings.jwt_leeway_seconds, settings.jwt_jwks_refresh_seconds) == (30.0, 10.0)
    jwks = _settings(
        ["--auth", "jwt", "--jwt-jwks-file", "keys.json", "--jwt-audience", "mnemo"],
        {"MNEMO_JWT_LEEWAY_SECONDS": "5", "MNEMO_JWT_JWKS_REFRESH_SECONDS": "60"},
    )
    assert (jwks.jwt_jwks_file, jwks.jwt_leeway_seconds, jwks.jwt_jwks_refresh_seconds) == (
        Path("keys.json"),
        5.0,
        60.0,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--auth", "jwt", "--jwt-audience", "a"], "exactly one of"),
        (
            ["--auth", "jwt", "--jwt-audience", "a", "--jwt-hs256-secret-file", "s"]
            + ["--jwt-public-key-file", "p"],
            "exactly one of",
        ),
        (
            ["--auth", "jwt", "--jwt-audience", "a", "--jwt-jwks-file", "j"]
            + ["--jwt-public-key-file", "p"],
            "exactly one of",
        ),
        (["--auth", "jwt", "--jwt-hs256-secret-file", "s"], "needs --jwt-audience"),
        (["--jwt-jwks-file", "j"], "--jwt-jwks-file given but --auth is none"),
        (["--jwt-leeway-seconds", "-1"], "must not be negative"),
        (["--jwt-jwks-refresh-seconds", "0"], "must be more than 0"),
        (["--auth", "basic"], "--auth"),
        (["--jwt-audience", "a"], "given but --auth is none"),
        (["--tls-cert-file", "c"], "go together"),
        (["--tls-key-file", "k"], "go together"),
        (["--tls-client-ca-file", "ca"], "needs --tls-cert-file"),
        (["--max-request-bytes", "1000"], "must exceed --max-message-bytes"),
        (["--rate-limit-per-second", "-1"], "must not be negative"),
        (["--rate-limit-per-second", "inf"], "finite"),
        (["--rate-limit-burst", "5"], "needs --rate-limit-per-second"),
        (["--jwt-tenant-claim", " "], "must not be empty"),
    ],
)
def test_inconsistent_security_settings_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _settings(argv)


def test_limits_defaults_fit_the_largest_message() -> None:
    settings = Settings()
    assert settings.max_request_bytes == 4 * 1024 * 1024 > settings.max_message_bytes
    assert (settings.rate_limit_per_second, settings.rate_limit_burst) == (0.0, 0)
    rated = _settings(["--rate-limit-per-second", "2.5", "--rate-limit-burst", "10"])
    assert (rated.rate_limit_per_second, rated.rate_limit_burst) == (2.5, 10)


def test_tls_files_that_do_not_hold_pem_are_refused_at_start(tmp_path: Path) -> None:
    from mnemo_server.app import server_credentials
    from mnemo_server.auth.tls import TlsConfigError

    garbage = tmp_path / "garbage.pem"
    garbage.write_text("no")
    settings = dataclasses.replace(Settings(), tls_cert_file=garbage, tls_key_file=garbage)
    with pytest.raises(TlsConfigError, match="holds no PEM certificate"):
        server_credentials(settings)
    missing = dataclasses.replace(settings, tls_cert_file=tmp_path / "missing.pem")
    with pytest.raises(TlsConfigError, match="cannot read"):
        server_credentials(missing)
