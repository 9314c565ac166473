"""The metrics port (``--metrics-listen HOST:PORT``): prometheus_client's own
HTTP server, in a thread, serving one server's registry in the Prometheus
text format on any path (``/metrics`` by convention). It has no
authentication: it listens on loopback unless
``--allow-unauthenticated-non-loopback`` says otherwise (``config``)."""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from mnemo_server.listening import cannot_listen

__all__ = ["MetricsEndpoint"]


class MetricsEndpoint:
    """Serves ``registry`` on ``host:port`` from ``start`` to ``stop``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self, host: str, port: int) -> int:
        """Bind and serve; the bound port. Raises ``RuntimeError`` if it cannot bind."""
        try:
            self._server, self._thread = start_http_server(port, host, self._registry)
        except OSError as error:
            listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            problem = cannot_listen(listen, "--metrics-listen", "MNEMO_METRICS_LISTEN", error)
            raise RuntimeError(problem) from None
        return int(self._server.server_port)

    def stop(self) -> None:
        """Stop serving and close the socket."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5)
