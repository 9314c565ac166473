"""The grpc.aio server: every mnemo.v1 service, health and reflection, over one store.

``MnemoServer`` is what ``mnemo serve`` runs and what the API tests start in
process (``listen="127.0.0.1:0"``; ``start()`` returns the bound port)::

    server = MnemoServer(settings)
    port = await server.start()
    ...
    await server.stop(grace=5)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mnemo.v1 import (
    agent_state_pb2,
    agent_state_pb2_grpc,
    checkpoints_pb2,
    checkpoints_pb2_grpc,
    conversations_pb2,
    conversations_pb2_grpc,
    documents_pb2,
    documents_pb2_grpc,
    governance_pb2,
    governance_pb2_grpc,
    memories_pb2,
    memories_pb2_grpc,
    sync_pb2,
    sync_pb2_grpc,
    working_memory_pb2,
    working_memory_pb2_grpc,
)
from mnemo_server.api.agent_state.servicer import AgentStateServicer
from mnemo_server.api.checkpoints.servicer import CheckpointServicer
from mnemo_server.api.conversations.servicer import ConversationServicer
from mnemo_server.api.documents.servicer import DocumentServicer
from mnemo_server.api.governance.servicer import GovernanceServicer
from mnemo_server.api.memories.servicer import MemoryServicer
from mnemo_server.api.sync.servicer import SyncServicer
from mnemo_server.api.user_data.handlers import UserDataHandlers
from mnemo_server.api.working_memory.servicer import WorkingMemoryServicer
from mnemo_server.auth import tls
from mnemo_server.auth.interceptor import Admission, AuthInterceptor
from mnemo_server.auth.jwt import JwtKeyFiles, JwtPolicy, TokenVerifier, load_verifier
from mnemo_server.auth.ratelimit import RateLimiter
from mnemo_server.config import Settings, is_loopback, listen_host
from mnemo_server.domain.app_state import AppStates
from mnemo_server.domain.change_watch import ChangeFeed, ChangeWatchSettings, Wakeups
from mnemo_server.domain.event_watch import WatchSettings
from mnemo_server.domain.observe import NO_OBSERVER, Observer
from mnemo_server.domain.ports import UserStore
from mnemo_server.domain.usecases.checkpoints import Checkpoints
from mnemo_server.domain.usecases.conversations import Conversations
from mnemo_server.domain.usecases.documents import Documents, purge_documents_until_stopped
from mnemo_server.domain.usecases.embedder_calls import EmbedderCalls
from mnemo_server.domain.usecases.embedding_worker import EmbeddingWorker
from mnemo_server.domain.usecases.extraction import Extraction
from mnemo_server.domain.usecases.governance import Governance
from mnemo_server.domain.usecases.maintenance import Retention, prune_until_stopped
from mnemo_server.domain.usecases.memories import Memories, NearDuplicates, QueryEmbedding
from mnemo_server.domain.usecases.recall import Recall
from mnemo_server.domain.usecases.temporary import purge_until_stopped
from mnemo_server.domain.usecases.user_data import UserDataRights
from mnemo_server.domain.usecases.working_memory import WorkingMemory
from mnemo_server.domain.usecases.writes import Writes
from mnemo_server.embedders import RemoteOptions, load_embedder
from mnemo_server.health import SERVING, HealthService, ServingStatus
from mnemo_server.listening import bind_error, cannot_listen
from mnemo_server.observability.endpoint import MetricsEndpoint
from mnemo_server.observability.wiring import Observability
from mnemo_server.rpc import reflection
from mnemo_server.rpc.errors import ErrorMappingInterceptor
from mnemo_server.runtime.bounded_waits import wait_task
from mnemo_server.store import migrate
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.feed.notify import open_notifier
from mnemo_server.store.memories.vector_cache import VectorCache
from mnemo_server.store.transactions.database import BatchLimits, Database, open_database
from mnemo_server.web.server import WebPort

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

WORKING_MEMORY_SERVICE = working_memory_pb2.DESCRIPTOR.services_by_name[
    "WorkingMemoryService"
].full_name
CONVERSATION_SERVICE = conversations_pb2.DESCRIPTOR.services_by_name[
    "ConversationService"
].full_name
MEMORY_SERVICE = memories_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
GOVERNANCE_SERVICE = governance_pb2.DESCRIPTOR.services_by_name["GovernanceService"].full_name
SYNC_SERVICE = sync_pb2.DESCRIPTOR.services_by_name["SyncService"].full_name
DOCUMENT_SERVICE = documents_pb2.DESCRIPTOR.services_by_name["DocumentService"].full_name
CHECKPOINT_SERVICE = checkpoints_pb2.DESCRIPTOR.services_by_name["CheckpointService"].full_name
AGENT_STATE_SERVICE = agent_state_pb2.DESCRIPTOR.services_by_name["AgentStateService"].full_name
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
MNEMO_SERVICES = (
    WORKING_MEMORY_SERVICE,
    CONVERSATION_SERVICE,
    MEMORY_SERVICE,
    GOVERNANCE_SERVICE,
    SYNC_SERVICE,
    DOCUMENT_SERVICE,
    CHECKPOINT_SERVICE,
    AGENT_STATE_SERVICE,
)

# Calls gRPC's core holds for this process, not yet taken by it, before it
# cancels new ones (``_grpc_server``): about 8.5 KB each (a burst of 20,000
# watches raised the RSS by 170 MB), so a bound on memory as much as on bursts.
MAX_PENDING_CALLS = 20_000

log = logging.getLogger("mnemo")


class ServerNotStarted(RuntimeError):
    """``stop`` or ``port`` before ``start``."""


# Settings stop here: auth/ takes plain values (docs/import-contracts.md).
def jwt_verifier(settings: Settings) -> TokenVerifier:
    """The bearer-token verifier of ``--jwt-*``. Raises ``AuthConfigError``."""
    policy = JwtPolicy(
        audience=settings.jwt_audience,
        issuer=settings.jwt_issuer,
        tenant_claim=settings.jwt_tenant_claim,
        admin_role=settings.jwt_admin_role,
        leeway_seconds=settings.jwt_leeway_seconds,
    )
    files = JwtKeyFiles(
        hs256_secret_file=settings.jwt_hs256_secret_file,
        public_key_file=settings.jwt_public_key_file,
        jwks_file=settings.jwt_jwks_file,
        jwks_refresh_seconds=settings.jwt_jwks_refresh_seconds,
    )
    return load_verifier(policy, files)


def server_credentials(settings: Settings) -> grpc.ServerCredentials | None:
    """The TLS credentials of ``--tls-*`` (``None``: plaintext). Raises ``TlsConfigError``."""
    return tls.server_credentials(
        settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file
    )


def admission_of(
    settings: Settings, users: UserStore, observer: Observer = NO_OBSERVER
) -> Admission:
    """Authentication (``--auth``) and rate limits (``--rate-limit-*``) of every call.

    Raises ``AuthConfigError`` (a ``ValueError``) for an unusable key file.
    """
    verifier = jwt_verifier(settings) if settings.auth == "jwt" else None
    if verifier is None and not is_loopback(settings.listen):
        log.warning(
            "serving WITHOUT authentication on %s (--allow-unauthenticated-non-loopback): "
            "whoever reaches this address can read and change every user's data",
            settings.listen,
        )
    limiter = None
    if settings.rate_limit_per_second > 0:
        limiter = RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst)
    return Admission(verifier, users if verifier is not None else None, limiter, observer)


async def prepare_schema(settings: Settings) -> None:
    """Examine the database, then migrate it when configured to (the SQLite
    default) or check it (``migrate.prepare``).

    Raises ``migrate.SchemaOutdated`` naming the command that fixes the schema
    (``migrate.NotMnemoDatabase`` for another application's database, never
    migrated here) or ``preflight.DatabaseUnusable`` (a file that is not a
    database or is damaged).
    """
    await asyncio.to_thread(
        migrate.prepare,
        settings.effective_database_url,
        upgrade_schema=settings.effective_migrate_on_start,
    )


def watch_settings(settings: Settings) -> ChangeWatchSettings:
    """How change watches behave (the ``--watch-*`` options)."""
    return ChangeWatchSettings(
        heartbeat_seconds=settings.watch_heartbeat_seconds,
        send_timeout_seconds=settings.watch_send_timeout_seconds,
        max_watchers=settings.watch_max_watchers,
        max_watchers_per_user=settings.watch_max_watchers_per_user,
        max_watchers_per_peer=settings.watch_max_watchers_per_peer,
    )


class MnemoServer:
    """One Mnemo server process's gRPC server and database.

    ``start`` runs named build steps in order; each step that opens something
    registers how to close it on one exit stack, so a step that fails closes,
    in reverse order, what the steps before it opened, and ``stop`` closes the
    same stack after its graceful steps. A start that failed can be retried.

    ``tracer_provider``: trace every call and store transaction with this
    OpenTelemetry provider (a test's, an embedding application's) whatever
    ``--tracing`` says; the server does not shut it down.
    """

    def __init__(
        self, settings: Settings, *, tracer_provider: TracerProvider | None = None
    ) -> None:
        self.settings = settings
        self._tracer_provider = tracer_provider
        # The Prometheus metrics port (--metrics-listen), when serving.
        self.metrics_port: int | None = None
        # What this start observes (metrics, tracing, access log).
        self.observability = Observability()
        self._server: grpc.aio.Server | None = None
        self._database: Database | None = None
        self._port: int | None = None
        # The gRPC-Web / Connect port (--web-listen), forwarding to this server.
        self.web_port: int | None = None
        self.service_names: tuple[str, ...] = ()
        # What a start opened, closed last to first; None when nothing is open.
        self._opened: contextlib.AsyncExitStack | None = None
        # How long ``stop`` lets in-flight calls finish (a failed start: none).
        self._grace: float | None = 0
        self._fresh_state()

    def _fresh_state(self) -> None:
        """What one start shares between its steps (a failed start used it up)."""
        self._health = HealthService()
        # Set at shutdown: ends event watches, purges and prunes.
        self._stopping = asyncio.Event()
        # Wake-ups of this process's change watches; closed at shutdown.
        self._wakeups = Wakeups()

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServerNotStarted("the server is not started")
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` actually bound."""
        host = self.settings.listen.rpartition(":")[0]
        return f"{host}:{self.port}"

    def describe_store(self) -> str:
        """``sqlite /abs/path`` or ``postgresql host:port/db`` (never a password)."""
        if self._database is None:
            raise ServerNotStarted("the server is not started")
        return self._database.describe()

    async def start(self) -> int:
        """Prepare the schema, open the database, bind and start serving.

        Returns the bound port. Raises ``migrate.SchemaOutdated`` (refusing a
        stale schema or another application's database),
        ``preflight.DatabaseUnusable`` (a damaged file or not a database),
        ``ValueError`` (an unusable database URL, ``EmbedderConfigError`` for
        an embedder that cannot be loaded, an unusable JWT key or TLS file,
        or ``TracingUnavailable`` for tracing without OpenTelemetry) or
        ``RuntimeError`` (an address, the metrics port's too, cannot be
        bound, or the server is already started). Whatever it raises, everything it had opened is
        closed again.
        """
        if self._opened is not None:
            raise RuntimeError("the server is already started")
        self._fresh_state()
        self._grace, self.web_port, self.metrics_port = 0, None, None
        async with contextlib.AsyncExitStack() as opened:
            port = await self._build(opened)
            self._opened = opened.pop_all()
        return port

    async def _build(self, opened: contextlib.AsyncExitStack) -> int:
        """The build steps, in order; each registers on ``opened`` how to undo it.

        ``opened`` closes in reverse, as ``stop`` did before the exit stack:
        the gRPC and web ports first, then the notifier, the background tasks
        and last the database they all use.
        """
        settings = self.settings
        embedder = load_embedder(
            settings.embedder,
            remote=RemoteOptions(
                url=settings.embedder_url,
                key_file=settings.embedder_key_file,
                dimensions=settings.embedder_dimensions,
                timeout_seconds=settings.embedder_timeout_seconds,
            ),
        )
        credentials = server_credentials(settings)
        observability = self._observe(opened)
        observer = observability.observer
        await prepare_schema(settings)
        database = self._open_database(opened, observer)
        store = SqlStore(
            database,
            vector_cache=VectorCache(observer=observer),
            idempotency_window=timedelta(seconds=settings.idempotency_window_seconds),
            embed_later=embedder is not None,
        )
        worker = None
        if embedder is not None:
            worker = EmbeddingWorker(store.embeddings, embedder, observer=observer)
            store.vectors_queued = worker.queued
        server = self._grpc_server(
            admission_of(settings, store.users, observer), observability.interceptors()
        )
        feed = ChangeFeed(store.feed, self._wakeups, watch_settings(settings), observer)
        calls = None
        if embedder is not None:
            calls = EmbedderCalls(embedder)
            opened.callback(calls.close)
        self._add_services(server, store, calls, feed, worker)
        if observability.metrics is not None:
            observability.metrics.pool(database.pool_usage)
            observability.metrics.watch(lambda: feed.watch_count)
            self.metrics_port = self._serve_metrics(opened, observability)
        self._start_background_tasks(opened, store)
        if worker is not None:
            await self._start_embedding(opened, worker)
        await self._start_notifier(opened, store)
        port, web = await self._bind_and_serve(opened, server, credentials)
        if web is not None:
            self.web_port = await web.start(self.service_names)
        await self._set_health(("", *MNEMO_SERVICES), SERVING)
        self._server, self._port, self._database = server, port, database
        return port

    def _observe(self, opened: contextlib.AsyncExitStack) -> Observability:
        """Metrics (``--metrics-listen``), tracing (``--tracing``, or the
        provider given) and the access log (``--log-format json``).
        Raises ``TracingUnavailable`` (a ``ValueError``) without OpenTelemetry."""
        settings = self.settings
        observability = Observability.build(
            metrics=bool(settings.metrics_listen),
            tracing=settings.tracing,
            access_log=settings.log_format == "json",
            tracer_provider=self._tracer_provider,
        )
        opened.push_async_callback(observability.close)
        self.observability = observability
        return observability

    def _serve_metrics(
        self, opened: contextlib.AsyncExitStack, observability: Observability
    ) -> int:
        """Serve the metrics on ``--metrics-listen``; its bound port.
        Raises ``RuntimeError`` if the address cannot be bound."""
        assert observability.metrics is not None
        endpoint = MetricsEndpoint(observability.metrics.registry)
        listen = self.settings.metrics_listen
        host = listen_host(listen)
        port = endpoint.start(host, int(listen.rpartition(":")[2]))
        opened.callback(endpoint.stop)
        log.info("Prometheus metrics (metrics port) serving on %s:%d", host, port)
        return port

    def _open_database(self, opened: contextlib.AsyncExitStack, observer: Observer) -> Database:
        """Open the database (lazily: nothing connects yet); closed last."""
        settings = self.settings
        database = open_database(
            settings.effective_database_url,
            read_lanes=settings.read_connections,
            write_lanes=settings.write_connections,
            limits=BatchLimits(writes=settings.write_batch),
            observer=observer,
        )
        opened.push_async_callback(database.close)
        if self.observability.tracing is not None:
            self.observability.tracing.dialect = database.dialect
        return database

    def _grpc_server(
        self,
        admission: Admission,
        observing: Sequence[grpc.aio.ServerInterceptor],  # type: ignore[type-arg]
    ) -> grpc.aio.Server:
        """The gRPC server, nothing bound yet; ``observing`` interceptors first."""
        return grpc.aio.server(
            # Observing first (it sees every call), then authentication: an
            # unauthenticated caller learns nothing else.
            interceptors=[*observing, AuthInterceptor(admission), ErrorMappingInterceptor()],
            options=(
                ("grpc.max_receive_message_length", self.settings.max_request_bytes),
                # gRPC sets SO_REUSEPORT by default: a second server on a taken
                # port would start and silently get part of the connections.
                ("grpc.so_reuseport", 0),
                # Calls wait in gRPC's core until this process takes them, one at
                # a time; past 1000 waiting (the default) the core cancels new
                # ones with a bare CANCELLED before any handler can answer, which
                # a burst of a few thousand watches reached. Every call reaches
                # its handler now, which refuses what it must with a reason.
                ("grpc.server.max_pending_requests", MAX_PENDING_CALLS),
                ("grpc.server.max_pending_requests_hard_limit", MAX_PENDING_CALLS),
            ),
        )

    def _add_services(
        self,
        server: grpc.aio.Server,
        store: SqlStore,
        calls: EmbedderCalls | None,
        feed: ChangeFeed,
        worker: EmbeddingWorker | None,
    ) -> None:
        """Every mnemo.v1 service over ``store``, health and reflection;
        ``calls`` runs the server's embedder for the serving path (``None``:
        it has none)."""
        settings = self.settings
        writes = Writes(store)
        working_memory_pb2_grpc.add_WorkingMemoryServiceServicer_to_server(
            WorkingMemoryServicer(WorkingMemory(store.conversations), writes, settings), server
        )
        conversations_pb2_grpc.add_ConversationServiceServicer_to_server(
            ConversationServicer(Conversations(store.conversations), writes, settings), server
        )
        settle = None if worker is None else worker.settled
        recall = Recall(
            store.memories,
            QueryEmbedding(calls),
            store.governance,
            settle,
            min_relevance=settings.min_relevance,
        )
        memories_pb2_grpc.add_MemoryServiceServicer_to_server(
            MemoryServicer(
                Memories(
                    store,
                    store.memories,
                    store.governance,
                    NearDuplicates(
                        calls,
                        settings.near_duplicates,
                        settings.near_duplicate_threshold,
                        settle,
                    ),
                ),
                recall,
                Extraction(store, store.memories, store.governance),
                writes,
                settings,
            ),
            server,
        )
        governance_pb2_grpc.add_GovernanceServiceServicer_to_server(
            GovernanceServicer(
                Governance(
                    store.governance,
                    self._stopping,
                    WatchSettings(max_watchers_per_peer=settings.watch_max_watchers_per_peer),
                ),
                writes,
                settings,
                UserDataHandlers(UserDataRights(store.user_data), settings),
            ),
            server,
        )
        sync_pb2_grpc.add_SyncServiceServicer_to_server(SyncServicer(feed), server)
        documents_pb2_grpc.add_DocumentServiceServicer_to_server(
            DocumentServicer(Documents(store.documents), writes), server
        )
        checkpoints_pb2_grpc.add_CheckpointServiceServicer_to_server(
            CheckpointServicer(Checkpoints(store.checkpoints), writes), server
        )
        agent_state_pb2_grpc.add_AgentStateServiceServicer_to_server(
            AgentStateServicer(AppStates(store.app_states)), server
        )
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        self.service_names = (*MNEMO_SERVICES, HEALTH_SERVICE, *reflection.SERVICE_NAMES)
        reflection.enable_server_reflection(self.service_names, server)

    def _start_background_tasks(self, opened: contextlib.AsyncExitStack, store: SqlStore) -> None:
        """The purge of expired temporary conversations and the prune of
        idempotency records and changes past their time (``maintenance``);
        both end when ``_stopping`` is set and are awaited before the
        database closes."""
        settings = self.settings
        purge = asyncio.create_task(
            purge_until_stopped(
                store.conversations, settings.purge_interval_seconds, self._stopping
            ),
            name="mnemo-purge-temporary",
        )
        retention = Retention(
            settings.idempotency_window_seconds, settings.change_retention_seconds
        )
        prune = asyncio.create_task(
            prune_until_stopped(
                store, store.feed, retention, settings.purge_interval_seconds, self._stopping
            ),
            name="mnemo-prune-records-and-changes",
        )
        purge_documents = asyncio.create_task(
            purge_documents_until_stopped(
                store.documents, settings.purge_interval_seconds, self._stopping
            ),
            name="mnemo-purge-documents",
        )
        opened.push_async_callback(self._end_background_tasks, purge, prune, purge_documents)

    async def _start_embedding(
        self, opened: contextlib.AsyncExitStack, worker: EmbeddingWorker
    ) -> None:
        """The background embedder (``embedding_worker``): its lease taken
        before the first call is served, ended with the other tasks."""
        await worker.start()
        task = asyncio.create_task(worker.run(self._stopping), name="mnemo-embedding")
        opened.push_async_callback(self._end_background_tasks, task)

    async def _end_background_tasks(self, *tasks: asyncio.Task[None]) -> None:
        self._stopping.set()
        for task in tasks:
            await wait_task(task, f"the background task {task.get_name()}")

    async def _start_notifier(self, opened: contextlib.AsyncExitStack, store: SqlStore) -> None:
        """Wake this process's change watches on commits (of any process)."""
        settings = self.settings
        notifier = open_notifier(
            settings.effective_database_url,
            self._wakeups,
            store.feed,
            poll_seconds=settings.watch_poll_seconds,
        )
        opened.push_async_callback(notifier.stop)
        await notifier.start()

    async def _bind_and_serve(
        self,
        opened: contextlib.AsyncExitStack,
        server: grpc.aio.Server,
        credentials: grpc.ServerCredentials | None,
    ) -> tuple[int, WebPort | None]:
        """Bind ``--listen`` and start serving; returns the port and the web
        port (``--web-listen``), which then forwards to this server and is
        started by the caller.

        Nothing can fail between binding and starting but the start itself:
        grpc.aio keeps the port of a server that never started bound until the
        process ends, even once stopped.
        """
        settings = self.settings
        # Checked first: gRPC's core would log a line of its own on a taken port.
        if (taken := bind_error(settings.listen)) is not None:
            raise RuntimeError(cannot_listen(settings.listen, "--listen", "MNEMO_LISTEN", taken))
        try:
            if credentials is None:
                port = server.add_insecure_port(settings.listen)
            else:
                port = server.add_secure_port(settings.listen, credentials)
        except RuntimeError:
            error = bind_error(settings.listen)
            problem = cannot_listen(settings.listen, "--listen", "MNEMO_LISTEN", error)
            raise RuntimeError(problem) from None
        web = WebPort(settings) if settings.web_listen else None
        opened.push_async_callback(self._stop_serving, server, web)
        if web is not None:
            web.attach(server)
        await server.start()
        return port, web

    async def _stop_serving(self, server: grpc.aio.Server, web: WebPort | None) -> None:
        """Refuse new calls and let in-flight ones finish for ``_grace`` seconds."""
        if web is None:
            await server.stop(self._grace)
        else:  # web responses end as the gRPC calls they forward end
            await asyncio.gather(server.stop(self._grace), web.stop(self._grace))

    async def _set_health(self, services: Sequence[str], status: ServingStatus) -> None:
        for service in services:
            await self._health.set(service, status)

    async def stop(self, grace: float | None) -> None:
        """Turn health NOT_SERVING, refuse new calls, let in-flight calls finish
        for up to ``grace`` seconds (then cancel them), stop the notifier and
        the background tasks and close the database."""
        if self._server is None:
            raise ServerNotStarted("the server is not started")
        await self._health.enter_graceful_shutdown()
        self._stopping.set()
        self._wakeups.close()  # every change watch ends with OK; clients resume
        opened, self._opened = self._opened, None
        if opened is not None:
            self._grace = grace
            await opened.aclose()
