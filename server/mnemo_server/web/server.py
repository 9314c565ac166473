"""The web port's lifecycle: uvicorn serving ``WebApp``, started and stopped with the gRPC server.

    web = WebPort(settings)
    web.attach(grpc_server)            # before grpc_server.start()
    port = await web.start(service_names)
    ...
    await web.stop(grace)              # alongside grpc_server.stop(grace)

uvicorn's own signal handling is switched off: ``mnemo serve`` owns SIGTERM
and SIGINT and stops both ports together (``lifecycle``). It serves TLS with
the gRPC port's ``--tls-*`` files (and requires client certificates when
``--tls-client-ca-file`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Generator, Iterable
from pathlib import Path

import grpc
import uvicorn

from mnemo_server.config import Settings, exposes_every_user
from mnemo_server.listening import bind, cannot_listen
from mnemo_server.web.asgi import WebApp
from mnemo_server.web.bounded_protocol import bounded_protocol
from mnemo_server.web.cors import CorsPolicy
from mnemo_server.web.forward import Forwarder, InternalListener
from mnemo_server.web.hosts import HostPolicy
from mnemo_server.web.methods import method_table

log = logging.getLogger("mnemo")

# Past the grace period, in-flight web responses get this long to carry the
# gRPC port's final status before their connections are dropped.
_DRAIN_SECONDS = 5.0


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers (the process's lifecycle owns them)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class WebPort:
    """gRPC-Web and Connect on ``--web-listen``, forwarding to the gRPC server."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._listener = InternalListener()
        self._forwarder: Forwarder | None = None
        self._server: _Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self.port: int | None = None

    def attach(self, grpc_server: grpc.aio.Server) -> None:
        """Make the gRPC server also listen on the private socket (before it starts)."""
        self._listener.attach(grpc_server)

    async def start(self, service_names: Iterable[str]) -> int:
        """Bind ``--web-listen`` and serve; returns the bound port.

        Raises ``RuntimeError`` when the address cannot be bound and
        ``ValueError`` for unusable TLS files.
        """
        settings = self._settings
        try:
            sock = bind(settings.web_listen)
        except OSError as error:
            self._listener.remove()
            problem = cannot_listen(settings.web_listen, "--web-listen", "MNEMO_WEB_LISTEN", error)
            raise RuntimeError(problem) from None
        self._forwarder = Forwarder(self._listener.target, settings.max_request_bytes)
        bound_host, port = sock.getsockname()[:2]
        scheme = "http" if settings.tls_cert_file is None else "https"
        app = WebApp(
            method_table(service_names),
            self._forwarder,
            CorsPolicy(settings.web_cors_origins),
            HostPolicy(bound_host, port, scheme, settings.web_allowed_hosts),
            settings.max_request_bytes,
        )
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_config=None,
            access_log=False,
            http=bounded_protocol(
                settings.web_header_timeout_seconds,
                settings.web_body_timeout_seconds,
                settings.web_max_connections,
            ),
            ws="none",
            server_header=False,
            ssl_certfile=_path_text(settings.tls_cert_file),
            ssl_keyfile=_path_text(settings.tls_key_file),
            ssl_ca_certs=_path_text(settings.tls_client_ca_file),
            ssl_cert_reqs=(
                ssl.CERT_NONE if settings.tls_client_ca_file is None else ssl.CERT_REQUIRED
            ),
        )
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        try:
            config.load()
        except (OSError, ssl.SSLError) as error:
            sock.close()
            await self._close_forwarding()
            raise ValueError(f"the web port cannot use the TLS files: {error}") from None
        self._server = _Server(config)
        self._serving = asyncio.create_task(self._server.serve([sock]), name="mnemo-web-port")
        while not self._server.started:
            if self._serving.done():
                await self._serving  # re-raises why it stopped
                raise RuntimeError(f"the web port on {settings.web_listen} did not start")
            await asyncio.sleep(0.01)
        self.port = int(sock.getsockname()[1])
        host = settings.web_listen.rpartition(":")[0]
        log.info("gRPC-Web and Connect (web port) serving on %s:%d", host, self.port)
        if exposes_every_user(settings):
            log.warning(
                "--allow-unauthenticated-any-origin: any web site may read, change and erase "
                "every user's memories through a browser that reaches %s:%d (--auth none, "
                "--web-cors-origins '*')",
                host,
                self.port,
            )
        return self.port

    async def stop(self, grace: float | None) -> None:
        """Stop accepting, let in-flight responses finish (the gRPC server's
        ``stop(grace)`` ends the calls they forward) and close the forwarding."""
        if self._server is not None and self._serving is not None:
            self._server.should_exit = True
            try:
                await asyncio.wait_for(
                    asyncio.shield(self._serving), (grace or 0.0) + _DRAIN_SECONDS
                )
            except TimeoutError:
                self._server.force_exit = True
                await self._serving
        await self._close_forwarding()

    async def _close_forwarding(self) -> None:
        if self._forwarder is not None:
            await self._forwarder.close()
        self._listener.remove()


def _path_text(path: Path | None) -> str | None:
    return None if path is None else str(path)
