"""The resolved settings: one frozen ``Settings``, and the error of a value it cannot hold.

``Settings`` is what the server reads at start; ``config.options`` builds it
from flags and the environment, ``config.security`` refuses unsafe
combinations of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
