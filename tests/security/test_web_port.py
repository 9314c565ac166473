"""Probes of the web port (gRPC-Web and Connect, ``--web-listen``) replayed
as an attacker would send them, against a live server under ``--auth none``.

- DNS rebinding: a page whose name is rebound to 127.0.0.1 sends its own
  name in ``Host`` and ``Origin``; the port must answer 421 and serve nothing,
  because only its listening addresses and ``--web-allowed-hosts`` are its
  names, and same-origin is judged against those, never against ``Host``.
- The console forbids framing in both dialects (CSP ``frame-ancestors`` and
  ``X-Frame-Options``).
- A slow-header client is disconnected after ``--web-header-timeout-seconds``,
  and connections past ``--web-max-connections`` are closed at once.
- A request whose body never comes (complete headers, a ``Content-Length``,
  then silence) is answered 408 and closed after
  ``--web-body-timeout-seconds``, so a handful of them cannot hold the port;
  a watch, whose body is complete, outlives that timeout.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.web import WebServer, serving_web

pytestmark = [pytest.mark.sqlite, pytest.mark.timeout(120)]

LIST = "/mnemo.v1.MemoryService/ListMemories"
CREATE = "/mnemo.v1.MemoryService/CreateMemory"
HTTP_TIMEOUT_S = 20.0
# How long a test waits for the server to close a connection it must close:
# a bound on the wait, not a measurement (the server's timeout is 1 s here).
CLOSE_BOUND_S = 30.0


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Web:
    server: WebServer

    @property
    def port(self) -> int:
        return self.server.port

    def request(self, method: str, path: str, body: bytes | None = None, **headers: str) -> Reply:
        """One request with exactly these headers (``Host`` among them when given)."""
        connection = self.server.connection()
        try:
            named = {key.replace("_", "-"): value for key, value in headers.items()}
            connection.putrequest(method, path, skip_host="Host" in named)
            for key, value in named.items():
                connection.putheader(key, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            found = {key.lower(): value for key, value in response.getheaders()}
            return Reply(response.status, found, response.read())
        finally:
            connection.close()

    def call(self, path: str, message: dict[str, Any], **headers: str) -> Reply:
        """A Connect unary JSON call."""
        body = json.dumps(message).encode()
        return self.request("POST", path, body, content_type="application/json", **headers)


@contextmanager
def web_server(tmp_path: Any, **overrides: Any) -> Iterator[Web]:
    with serving_web(f"sqlite:///{tmp_path / 'mnemo.db'}", **overrides) as server:
        yield Web(server)


@pytest.fixture
def web(tmp_path: Any) -> Iterator[Web]:
    with web_server(tmp_path) as server:
        yield server


def test_a_rebound_name_is_misdirected_and_reads_nothing(web: Web) -> None:
    own = f"127.0.0.1:{web.port}"
    saved = web.call(CREATE, {"parent": "users/carol", "memory": {"text": "carol diary"}})
    assert saved.status == 200, saved.body
    evil = f"evil.example:{web.port}"
    for headers in (
        {"Host": evil, "Origin": f"http://{evil}"},
        {"Host": evil},  # a simple request without Origin from the rebound page
    ):
        reply = web.call(LIST, {"parent": "users/carol"}, **headers)
        assert reply.status == 421, (headers, reply)
        assert b"carol diary" not in reply.body
        assert b"--web-allowed-hosts" in reply.body
    erased = web.call(
        "/mnemo.v1.GovernanceService/DeleteUserData",
        {"name": "users/carol"},
        Host=evil,
        Origin=f"http://{evil}",
    )
    assert erased.status == 421
    preflight = web.request(
        "OPTIONS",
        LIST,
        Host=evil,
        Origin=f"http://{evil}",
        Access_Control_Request_Method="POST",
    )
    assert preflight.status == 421
    console = web.request("GET", "/console/", Host=evil)
    assert console.status == 421 and b"<html" not in console.body.lower()
    # The port's own names still work, same-origin (the console's calls): no CORS headers.
    for host in (own, f"localhost:{web.port}"):
        mine = web.call(LIST, {"parent": "users/carol"}, Host=host, Origin=f"http://{host}")
        assert mine.status == 200 and b"carol diary" in mine.body
        assert "access-control-allow-origin" not in mine.headers
    # Host its own but Origin another site: a cross-origin call, refused by CORS.
    foreign = web.call(LIST, {"parent": "users/carol"}, Host=own, Origin=f"http://{evil}")
    assert foreign.status == 403 and b"carol diary" not in foreign.body


def test_no_host_header_is_refused(web: Web) -> None:
    with socket.create_connection(("127.0.0.1", web.port), timeout=HTTP_TIMEOUT_S) as sock:
        sock.sendall(b"GET /console/ HTTP/1.0\r\n\r\n")
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 421 ")


def test_allowed_hosts_name_the_port_behind_a_proxy(tmp_path: Any) -> None:
    with web_server(tmp_path, web_allowed_hosts=("mnemo.example", "other.example:8443")) as web:
        # A listed name without a port: any port (a proxy's); a scheme of either kind.
        for host, origin in (
            ("mnemo.example", "https://mnemo.example"),
            ("mnemo.example:8080", "http://mnemo.example:8080"),
            ("other.example:8443", "https://other.example:8443"),
        ):
            reply = web.call(LIST, {"parent": "users/dan"}, Host=host, Origin=origin)
            assert reply.status == 200, (host, reply)
            assert "access-control-allow-origin" not in reply.headers
        assert web.call(LIST, {"parent": "users/dan"}, Host="other.example:9999").status == 421
        assert web.call(LIST, {"parent": "users/dan"}, Host="mnemo.example.evil").status == 421


def test_the_console_cannot_be_framed(web: Web) -> None:
    page = web.request("GET", "/console/")
    assert page.status == 200
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_a_slow_header_client_is_disconnected(tmp_path: Any) -> None:
    with web_server(tmp_path, web_header_timeout_seconds=1.0) as web:
        with socket.create_connection(("127.0.0.1", web.port), timeout=CLOSE_BOUND_S) as sock:
            sock.sendall(b"POST /mnemo.v1.MemoryService/ListMemories HTTP/1.1\r\n")
            _trickle_headers_until_closed(sock)
        # The port still serves.
        assert web.call(LIST, {"parent": "users/erin"}).status == 200


def test_connections_past_the_cap_are_closed(tmp_path: Any) -> None:
    cap = 5
    with web_server(tmp_path, web_max_connections=cap, web_header_timeout_seconds=60.0) as web:
        held = [socket.create_connection(("127.0.0.1", web.port)) for _ in range(cap)]
        try:
            for sock in held:  # each is accepted and waits for its headers
                sock.sendall(b"GET /console/ HTTP/1.1\r\n")
            extra = socket.create_connection(("127.0.0.1", web.port), timeout=CLOSE_BOUND_S)
            with extra:
                with contextlib.suppress(OSError):  # closed before the request went out
                    extra.sendall(b"GET /console/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert _read_all(extra) == b"", "a connection past the cap must be closed"
        finally:
            for sock in held:
                sock.close()
        # Once they are gone, connections are served again.
        for _ in range(int(CLOSE_BOUND_S / 0.1)):
            if web.request("GET", "/console/").status == 200:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the port did not serve again after the held connections closed")


def _stalled_request(port: int, sent: bytes = b"") -> bytes:
    """Complete headers of a call announcing a 100-byte body, and ``sent`` of it."""
    return (
        f"POST {LIST} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    ).encode() + sent


def _answer_then_close(sock: socket.socket) -> bytes:
    """What the server sends before it closes the connection (within CLOSE_BOUND_S)."""
    sock.settimeout(CLOSE_BOUND_S)
    try:
        return _read_all(sock)
    except TimeoutError:
        pytest.fail(f"the connection was still open after {CLOSE_BOUND_S} s")


def test_a_request_whose_body_never_comes_is_closed(tmp_path: Any) -> None:
    # The header timeout is far away: only the body timeout can close these.
    with web_server(tmp_path, web_body_timeout_seconds=1.0, web_header_timeout_seconds=60.0) as web:
        for sent in (b"", b'{"parent": "us'):  # no body at all; a part of it, then silence
            with socket.create_connection(("127.0.0.1", web.port)) as sock:
                sock.sendall(_stalled_request(web.port, sent))
                answer = _answer_then_close(sock)
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
            assert b"--web-body-timeout-seconds" in answer
        # The port still serves.
        assert web.call(LIST, {"parent": "users/erin"}).status == 200


def test_stalled_bodies_do_not_lock_the_port(tmp_path: Any) -> None:
    cap = 3
    with web_server(
        tmp_path,
        web_max_connections=cap,
        web_body_timeout_seconds=2.0,
        web_header_timeout_seconds=60.0,
    ) as web:
        stalled = [socket.create_connection(("127.0.0.1", web.port)) for _ in range(cap)]
        try:
            for sock in stalled:
                sock.sendall(_stalled_request(web.port))
            # They fill the port: a new client is turned away for now...
            extra = socket.create_connection(("127.0.0.1", web.port), timeout=CLOSE_BOUND_S)
            with extra:
                with contextlib.suppress(OSError):
                    extra.sendall(b"GET /console/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert _read_all(extra) == b"", "the stalled connections should fill the port"
            # ...but only until the body timeout closes them,
            for sock in stalled:
                assert _answer_then_close(sock).startswith(b"HTTP/1.1 408 ")
        finally:
            for sock in stalled:
                sock.close()
        # after which new clients are served.
        for _ in range(int(CLOSE_BOUND_S / 0.1)):
            with contextlib.suppress(OSError, http.client.HTTPException):
                if web.call(LIST, {"parent": "users/erin"}).status == 200:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("stalled bodies locked new clients out past the body timeout")


def test_a_watch_outlives_the_body_timeout(tmp_path: Any) -> None:
    # Its request body is complete: the body timeout no longer runs while it streams.
    with web_server(tmp_path, web_body_timeout_seconds=1.0) as web:
        connection = web.server.connection()
        try:
            request = json.dumps({"parent": "users/erin"}).encode()
            connection.request(
                "POST",
                "/mnemo.v1.SyncService/WatchChanges",
                body=struct.pack(">BI", 0, len(request)) + request,
                headers={"content-type": "application/connect+json"},
            )
            response = connection.getresponse()
            assert response.status == 200
            time.sleep(3.0)  # three body timeouts
            saved = web.call(CREATE, {"parent": "users/erin", "memory": {"text": "still here"}})
            assert saved.status == 200, saved.body
            while True:  # heartbeats, then the change
                flags, length = struct.unpack(">BI", response.read(5))
                message = json.loads(response.read(length))
                assert flags == 0, f"the watch ended: {message}"
                if "change" in message:
                    break
            assert message["change"]["memory"]["text"] == "still here"
        finally:
            connection.close()


def test_a_body_sent_after_an_early_answer_leaves_the_header_timeout_on(tmp_path: Any) -> None:
    # An answer before the body is read (421 here), then the body, then the next
    # request's headers a byte now and then: the header timeout still applies.
    with web_server(tmp_path, web_header_timeout_seconds=1.0) as web:
        with socket.create_connection(("127.0.0.1", web.port), timeout=CLOSE_BOUND_S) as sock:
            sock.sendall(
                b"POST " + LIST.encode() + b" HTTP/1.1\r\nHost: evil.example\r\n"
                b"Content-Length: 4\r\n\r\n"
            )
            assert sock.recv(65536).startswith(b"HTTP/1.1 421 ")
            sock.sendall(b"{}{}")
            sock.sendall(b"POST " + LIST.encode() + b" HTTP/1.1\r\n")
            _trickle_headers_until_closed(sock)


def _trickle_headers_until_closed(sock: socket.socket) -> None:
    """Send a header line now and then, never the end of the headers, until
    the server closes the connection (a failure after ``CLOSE_BOUND_S``)."""
    for _ in range(int(CLOSE_BOUND_S / 0.5)):
        try:
            sock.sendall(b"X-Slow: 1\r\n")
        except OSError:
            return
        if _closed_within(sock, 0.5):
            return
    pytest.fail("the slow-header connection was never closed")


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        data = sock.recv(65536)
    except TimeoutError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(CLOSE_BOUND_S)
    return data == b"" or data.startswith(b"HTTP/1.1 408")


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)
