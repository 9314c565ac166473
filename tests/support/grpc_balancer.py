"""A real nginx in front of ``mnemo serve`` processes: the gRPC load balancer
of ``docs/operations.md`` ("Running several processes behind a load
balancer"), for deployment tests.

    with grpc_balancer([a.target, b.target, c.target], tmp_path) as balancer:
        channel = grpc.insecure_channel(balancer.target)   # "127.0.0.1:PORT"

nginx runs in the foreground (``-g 'daemon off;'``) from a configuration
written into a directory of its own (pid file, logs and temp paths there too),
listens on a free port of 127.0.0.1, and is stopped (SIGQUIT, then SIGKILL)
when the block ends. Every response carries the upstream that served it in
the ``x-mnemo-upstream`` header (initial metadata; ``"A, B"`` when nginx
passed the call on from A to B), and every call is one line of
``access.log``: ``upstream_addr status grpc_status uri``.

``make test-python`` installs Debian's nginx when ``nginx`` is missing.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.subprocess_server import end_process

__all__ = [
    "TEST_ONLY_DIRECTIVES",
    "UPSTREAM_HEADER",
    "GrpcBalancer",
    "grpc_balancer",
    "nginx_config",
]

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 20.0
UPSTREAM_HEADER = "x-mnemo-upstream"
_POLL_S = 0.05

TEST_ONLY_DIRECTIVES = (
    "worker_processes",
    "user",
    "pid",
    "error_log",
    "events",
    "worker_connections",
    "http",
    "client_body_temp_path",
    "proxy_temp_path",
    "fastcgi_temp_path",
    "uwsgi_temp_path",
    "scgi_temp_path",
    "log_format",
    "access_log",
    f"add_header {UPSTREAM_HEADER}",
    "listen",
    "server 127.0.0.1:",
)
"""What ``nginx_config`` adds to the documented configuration (paths, the
log, the header, the addresses)."""


def directives(config: str) -> list[str]:
    """The lines of an nginx configuration that set something (comments,
    braces-only lines and the test's own directives left out)."""
    found = []
    for line in config.splitlines():
        line = line.split("#", 1)[0].strip().rstrip("{").strip()
        if line and line != "}" and not line.startswith(TEST_ONLY_DIRECTIVES):
            found.append(line)
    return found


def nginx_config(listen_port: int, upstreams: Sequence[str], prefix: Path) -> str:
    """The configuration of the load balancer (the one documented in
    ``docs/operations.md``, plus the test's paths, log and header)."""
    servers = "\n".join(
        f"        server {target} max_fails=1 fail_timeout=10s;" for target in upstreams
    )
    # A master running as root starts its workers as ``user``; nginx ignores
    # the directive (with a notice) when not root.
    return f"""\
worker_processes 1;
user {getpass.getuser()};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log notice;
events {{
    worker_connections 1024;
}}
http {{
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    log_format mnemo '$upstream_addr $status $upstream_trailer_grpc_status $request_uri';
    access_log {prefix}/access.log mnemo;

    upstream mnemo {{
{servers}
        keepalive 32;
        keepalive_timeout 60s;
    }}

    server {{
        listen 127.0.0.1:{listen_port} http2;
        # The server enforces --max-request-bytes itself, with an ErrorInfo.
        client_max_body_size 0;
        # Client streams (ImportUserData) may pause between messages.
        client_body_timeout 5m;
        # Idle client connections: longer than a client's keepalive pings.
        keepalive_timeout 10m;

        location / {{
            grpc_pass grpc://mnemo;
            grpc_socket_keepalive on;
            grpc_connect_timeout 2s;
            # Between two reads from the upstream: above --watch-heartbeat-seconds,
            # so that an idle watch (a heartbeat every 15 s) stays open.
            grpc_read_timeout 5m;
            grpc_send_timeout 5m;
            # A call that did not reach a process (refused, reset before it was
            # sent) goes to the next one; a call that reached one is never
            # re-sent by nginx (no non_idempotent): the client retries it,
            # with its request id.
            grpc_next_upstream error timeout;
            grpc_next_upstream_tries 3;
            grpc_next_upstream_timeout 10s;
            error_page 502 503 504 = /upstream-unavailable;
            add_header {UPSTREAM_HEADER} $upstream_addr always;
        }}

        # No process answered: a gRPC UNAVAILABLE (trailers only), which
        # clients retry, instead of nginx's HTML error page.
        location = /upstream-unavailable {{
            internal;
            default_type application/grpc;
            add_header grpc-status 14 always;
            add_header grpc-message "no Mnemo process answered" always;
            add_header {UPSTREAM_HEADER} $upstream_addr always;
            return 204;
        }}
    }}
}}
"""


class GrpcBalancer:
    """One nginx process balancing gRPC calls over ``upstreams``."""

    def __init__(self, upstreams: Sequence[str], directory: Path) -> None:
        self.upstreams = tuple(upstreams)
        self.directory = directory
        self._port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def target(self) -> str:
        if not self._port:
            raise RuntimeError("nginx was never started")
        return f"127.0.0.1:{self._port}"

    @property
    def access_log(self) -> Path:
        return self.directory / "access.log"

    def access_lines(self) -> list[list[str]]:
        """The access log, one ``[upstream_addr, status, grpc_status, uri]``
        per finished call (``upstream_addr`` may list several, comma-separated)."""
        if not self.access_log.exists():
            return []
        rows = []
        for line in self.access_log.read_text().splitlines():
            addresses, status, grpc_status, uri = line.rsplit(" ", 3)
            rows.append([addresses, status, grpc_status, uri])
        return rows

    def start(self) -> str:
        """Start nginx and wait (bounded) until it accepts connections."""
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.access(nginx, os.X_OK):
            raise RuntimeError("nginx is not installed: `make test-python` installs it (apt-get)")
        self._port = _free_port()
        config = self.directory / "nginx.conf"
        config.write_text(nginx_config(self._port, self.upstreams, self.directory))
        output = (self.directory / "nginx.out").open("wb")
        self._process = subprocess.Popen(
            [
                nginx,
                "-p",
                str(self.directory),
                "-c",
                str(config),
                "-e",
                str(self.directory / "error.log"),
                "-g",
                "daemon off;",
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        output.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"nginx exited with {self._process.returncode}: {self._log()}")
            try:
                socket.create_connection(("127.0.0.1", self._port), timeout=1).close()
            except OSError:
                time.sleep(_POLL_S)
            else:
                return self.target
        self.stop()
        raise RuntimeError(f"nginx did not listen within {START_TIMEOUT_S}s: {self._log()}")

    def stop(self) -> None:
        """Graceful stop (SIGQUIT: open calls finish, logs flushed); SIGKILL
        if it hangs."""
        end_process(self._process, signal.SIGQUIT, STOP_TIMEOUT_S)

    def _log(self) -> str:
        parts = []
        for name in ("nginx.out", "error.log"):
            path = self.directory / name
            if path.exists():
                parts.append(path.read_text(errors="replace")[-2000:])
        return "\n".join(parts)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def grpc_balancer(upstreams: Sequence[str], directory: Path) -> Iterator[GrpcBalancer]:
    """A started nginx over ``upstreams`` for the block, stopped afterwards."""
    directory.mkdir(parents=True, exist_ok=True)
    balancer = GrpcBalancer(upstreams, directory)
    try:
        balancer.start()
        yield balancer
    finally:
        balancer.stop()
