"""The web port (gRPC-Web and Connect) through a real server, spoken with a raw HTTP client.

Every call goes over HTTP/1.1 to ``--web-listen`` and is forwarded to the gRPC
port of the same server, so what is checked here is the protocol mapping:
framing, codecs, status and error details, metadata, streaming, CORS.
Protocol tests run on SQLite; the save-and-recall path runs on both backends.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import sync_pb2
from mnemo_server.config import ConfigError, resolve
from tests.support.certificates import CertificateAuthority
from tests.support.tokens import SigningKeys
from tests.support.web import WebServer, serving_web

SQLITE_ONLY = pytest.mark.parametrize(
    "backend", [pytest.param("sqlite", marks=pytest.mark.sqlite)], indirect=True
)
ORIGIN = "http://127.0.0.1:5173"
HTTP_TIMEOUT_S = 20.0
MEMORY = "/mnemo.v1.MemoryService/"
SYNC = "/mnemo.v1.SyncService/"


@contextmanager
def web_server(database_url: str, **overrides: Any) -> Iterator[WebServer]:
    overrides.setdefault("web_cors_origins", (ORIGIN,))
    with serving_web(database_url, **overrides) as server:
        yield server


@pytest.fixture
def web(database_url: str) -> Iterator[WebServer]:
    with web_server(database_url) as server:
        yield server


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def post(server: WebServer, path: str, body: bytes, content_type: str, **headers: str) -> Reply:
    connection = server.connection()
    try:
        all_headers = {"content-type": content_type, **_http_headers(headers)}
        connection.request("POST", path, body=body, headers=all_headers)
        response = connection.getresponse()
        return Reply(response.status, _lowered(response.getheaders()), response.read())
    finally:
        connection.close()


def _http_headers(headers: dict[str, str]) -> dict[str, str]:
    return {key.replace("_", "-"): value for key, value in headers.items()}


def _lowered(headers: list[tuple[str, str]]) -> dict[str, str]:
    return {key.lower(): value for key, value in headers}


# ------------------------------------------------------------------ framing


def envelope(data: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(data)) + data


def envelopes(body: bytes) -> list[tuple[int, bytes]]:
    frames = []
    while body:
        flags, length = struct.unpack_from(">BI", body)
        frames.append((flags, body[5 : 5 + length]))
        body = body[5 + length :]
    return frames


@dataclass(frozen=True)
class GrpcWebReply:
    messages: list[bytes]
    trailers: dict[str, str]

    @property
    def status(self) -> int:
        return int(self.trailers["grpc-status"])

    def details(self) -> status_pb2.Status:
        value = self.trailers["grpc-status-details-bin"]
        return status_pb2.Status.FromString(base64.b64decode(value + "=" * (-len(value) % 4)))


def grpc_web_reply(body: bytes) -> GrpcWebReply:
    frames = envelopes(body)
    assert frames and frames[-1][0] == 0x80, "the body must end with the trailer frame"
    assert all(flags == 0 for flags, _ in frames[:-1])
    return GrpcWebReply([data for _, data in frames[:-1]], parse_trailers(frames[-1][1]))


def parse_trailers(block: bytes) -> dict[str, str]:
    lines = [line for line in block.decode("latin-1").split("\r\n") if line]
    return {key.strip(): value.strip() for key, _, value in (x.partition(":") for x in lines)}


def grpc_web_call(server: WebServer, path: str, request: Message, **headers: str) -> GrpcWebReply:
    reply = post(
        server, path, envelope(request.SerializeToString()), "application/grpc-web+proto", **headers
    )
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/grpc-web+proto"
    return grpc_web_reply(reply.body)


def connect_stream(server: WebServer, path: str, request: dict[str, Any]) -> list[Any]:
    """A Connect JSON server stream: the messages, then the end-of-stream object."""
    reply = post(server, path, envelope(json.dumps(request).encode()), "application/connect+json")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/connect+json"
    frames = envelopes(reply.body)
    assert frames[-1][0] == 0x02 and all(flags == 0 for flags, _ in frames[:-1])
    return [json.loads(data) for _, data in frames]


def create_memory(server: WebServer, user: str, text: str, **headers: str) -> Reply:
    body = json.dumps({"parent": f"users/{user}", "memory": {"text": text}}).encode()
    return post(server, MEMORY + "CreateMemory", body, "application/json", **headers)


def decoded_details(details: list[dict[str, Any]]) -> dict[str, Message]:
    """Connect error details by type, decoded from their base64 ``value``."""
    classes: dict[str, type[Message]] = {
        "google.rpc.ErrorInfo": error_details_pb2.ErrorInfo,
        "google.rpc.BadRequest": error_details_pb2.BadRequest,
    }
    result = {}
    for detail in details:
        value = detail["value"]
        raw = base64.b64decode(value + "=" * (-len(value) % 4))
        result[detail["type"]] = classes[detail["type"]].FromString(raw)
    return result


# ------------------------------------------------------------------ unary


@SQLITE_ONLY
def test_connect_unary_json_and_proto_save_and_read_a_memory(web: WebServer) -> None:
    created = create_memory(web, "alice", "Prefers green tea")
    assert created.status == 200
    assert created.headers["content-type"] == "application/json"
    memory = created.json()["memory"]
    assert memory["text"] == "Prefers green tea"
    assert memory["name"].startswith("users/alice/memories/")

    request = mm.GetMemoryRequest(name=memory["name"]).SerializeToString()
    got = post(
        web, MEMORY + "GetMemory", request, "application/proto", connect_protocol_version="1"
    )
    assert got.status == 200
    assert got.headers["content-type"] == "application/proto"
    assert mm.GetMemoryResponse.FromString(got.body).memory.text == "Prefers green tea"


@SQLITE_ONLY
def test_grpc_web_unary_answers_one_message_and_ok_trailers(web: WebServer) -> None:
    request = mm.CreateMemoryRequest(parent="users/alice", memory=mm.Memory(text="Likes chess"))
    reply = grpc_web_call(web, MEMORY + "CreateMemory", request)
    assert reply.status == 0
    [message] = reply.messages
    assert mm.CreateMemoryResponse.FromString(message).memory.text == "Likes chess"


@SQLITE_ONLY
def test_grpc_web_json_frames_carry_proto3_json(web: WebServer) -> None:
    request = {"parent": "users/alice", "memory": {"text": "Reads at night"}}
    body = envelope(json.dumps(request).encode())
    reply = post(web, MEMORY + "CreateMemory", body, "application/grpc-web+json")
    assert reply.headers["content-type"] == "application/grpc-web+json"
    decoded = grpc_web_reply(reply.body)
    assert decoded.status == 0
    assert json.loads(decoded.messages[0])["memory"]["text"] == "Reads at night"


@SQLITE_ONLY
def test_grpc_web_text_base64_request_and_frames(web: WebServer) -> None:
    request = mm.CreateMemoryRequest(parent="users/alice", memory=mm.Memory(text="Owns a cat"))
    body = base64.b64encode(envelope(request.SerializeToString()))
    reply = post(web, MEMORY + "CreateMemory", body, "application/grpc-web-text")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/grpc-web-text+proto"
    decoded = grpc_web_reply(_decode_base64_chunks(reply.body))
    assert decoded.status == 0
    assert mm.CreateMemoryResponse.FromString(decoded.messages[0]).memory.text == "Owns a cat"


def _decode_base64_chunks(body: bytes) -> bytes:
    """Concatenated padded base64 chunks (one per frame), decoded."""
    out, start = b"", 0
    for end in range(4, len(body) + 1, 4):
        if body[end - 1 : end] == b"=" or end == len(body):
            out += base64.b64decode(body[start:end])
            start = end
    return out


# ------------------------------------------------------------------ streams


def test_grpc_web_server_stream_recalls_every_match(web: WebServer) -> None:
    for text in ("Tea with lemon", "Tea in the morning", "Coffee never"):
        assert create_memory(web, "alice", text).status == 200
    request = mm.RecallMemoriesRequest(parent="users/alice", query="tea", max_results=10)
    reply = grpc_web_call(web, MEMORY + "RecallMemories", request)
    assert reply.status == 0
    texts = {mm.RecallMemoriesResponse.FromString(m).memory.text for m in reply.messages}
    assert texts == {"Tea with lemon", "Tea in the morning"}


@SQLITE_ONLY
def test_connect_json_server_stream_ends_with_an_empty_end_of_stream(web: WebServer) -> None:
    assert create_memory(web, "alice", "Tea with lemon").status == 200
    *messages, end = connect_stream(
        web, MEMORY + "RecallMemories", {"parent": "users/alice", "query": "tea"}
    )
    assert [m["memory"]["text"] for m in messages] == ["Tea with lemon"]
    assert "error" not in end


class StreamReader:
    """Reads gRPC-Web frames of one open response as they arrive."""

    def __init__(self, response: http.client.HTTPResponse) -> None:
        self._response = response

    def frame(self) -> tuple[int, bytes]:
        head = self._read(5)
        flags, length = struct.unpack(">BI", head)
        return flags, self._read(length)

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._response.read(size - len(data))
            assert chunk, "the stream ended early"
            data += chunk
        return data


@contextmanager
def open_watch(
    server: WebServer, user: str, after_cursor: int = 0
) -> Iterator[tuple[StreamReader, http.client.HTTPConnection]]:
    connection = server.connection()
    request = sync_pb2.WatchChangesRequest(parent=f"users/{user}", after_cursor=after_cursor)
    try:
        connection.request(
            "POST",
            SYNC + "WatchChanges",
            body=envelope(request.SerializeToString()),
            headers={"content-type": "application/grpc-web+proto"},
        )
        response = connection.getresponse()
        assert response.status == 200
        yield StreamReader(response), connection
    finally:
        connection.close()


def next_change(reader: StreamReader) -> sync_pb2.Change:
    """The next change on the stream (heartbeats are skipped)."""
    while True:
        flags, data = reader.frame()
        assert flags == 0, f"the watch ended: {parse_trailers(data)}"
        event = sync_pb2.WatchChangesResponse.FromString(data)
        if event.HasField("change"):
            return event.change


@SQLITE_ONLY
def test_watch_streams_each_change_as_it_happens(web: WebServer) -> None:
    assert create_memory(web, "alice", "First").status == 200
    with open_watch(web, "alice") as (reader, _):
        first = next_change(reader)
        assert first.memory.text == "First"
        # Made after the stream is open: it arrives only if each message is flushed.
        assert create_memory(web, "alice", "Second").status == 200
        second = next_change(reader)
        assert second.memory.text == "Second"
        assert second.cursor > first.cursor


@SQLITE_ONLY
def test_a_client_going_away_ends_its_forwarded_watch(database_url: str) -> None:
    with web_server(database_url, watch_max_watchers=1) as web:
        with open_watch(web, "alice") as (reader, _):
            assert create_memory(web, "alice", "Only").status == 200
            next_change(reader)
        # The closed connection's watch must end, else the limit of one refuses this.
        for _attempt in range(100):
            with open_watch(web, "alice") as (reader, _):
                flags, data = reader.frame()
                if flags == 0:
                    break
                assert parse_trailers(data)["grpc-status"] == "8"  # the first still running
            time.sleep(0.05)
        else:
            pytest.fail("the watch of the closed connection was never cancelled")


@SQLITE_ONLY
def test_server_shutdown_ends_an_open_watch_with_ok(database_url: str) -> None:
    with web_server(database_url) as web:
        with open_watch(web, "alice") as (reader, _):
            assert create_memory(web, "alice", "Before").status == 200
            next_change(reader)
            stopper = threading.Thread(target=web.thread.stop, kwargs={"grace": 5})
            stopper.start()
            while True:
                flags, data = reader.frame()
                if flags == 0x80:
                    break
            stopper.join(30)
        assert parse_trailers(data)["grpc-status"] == "0"


@SQLITE_ONLY
def test_connect_timeout_ends_a_stream_with_deadline_exceeded(web: WebServer) -> None:
    body = envelope(json.dumps({"parent": "users/alice"}).encode())
    reply = post(
        web, SYNC + "WatchChanges", body, "application/connect+json", connect_timeout_ms="300"
    )
    end = json.loads(envelopes(reply.body)[-1][1])
    assert end["error"]["code"] == "deadline_exceeded"


# ------------------------------------------------------------------ errors


@SQLITE_ONLY
def test_grpc_web_error_carries_status_details_with_reason_and_violations(
    web: WebServer,
) -> None:
    reply = grpc_web_call(web, MEMORY + "GetMemory", mm.GetMemoryRequest(name="bad"))
    assert reply.messages == []
    assert reply.status == 3  # INVALID_ARGUMENT
    assert "users/{user}/memories/{memory}" in reply.trailers["grpc-message"]
    details = reply.details()
    info = error_details_pb2.ErrorInfo()
    bad_request = error_details_pb2.BadRequest()
    assert details.details[0].Unpack(info) and details.details[1].Unpack(bad_request)
    assert (info.reason, info.domain) == ("INVALID_NAME", "mnemo.v1")
    assert [v.field for v in bad_request.field_violations] == ["name"]


@SQLITE_ONLY
def test_connect_unary_error_json_with_http_status_and_details(web: WebServer) -> None:
    reply = post(web, MEMORY + "GetMemory", b'{"name": "bad"}', "application/json")
    assert reply.status == 400
    error = reply.json()
    assert error["code"] == "invalid_argument"
    assert "users/{user}/memories/{memory}" in error["message"]
    details = decoded_details(error["details"])
    info = details["google.rpc.ErrorInfo"]
    assert isinstance(info, error_details_pb2.ErrorInfo) and info.reason == "INVALID_NAME"
    bad_request = details["google.rpc.BadRequest"]
    assert isinstance(bad_request, error_details_pb2.BadRequest)
    assert [v.field for v in bad_request.field_violations] == ["name"]


@SQLITE_ONLY
def test_connect_not_found_is_http_404(web: WebServer) -> None:
    body = json.dumps({"name": "users/alice/memories/nope"}).encode()
    reply = post(web, MEMORY + "GetMemory", body, "application/json")
    assert (reply.status, reply.json()["code"]) == (404, "not_found")
    info = decoded_details(reply.json()["details"])["google.rpc.ErrorInfo"]
    assert isinstance(info, error_details_pb2.ErrorInfo) and info.reason == "NOT_FOUND"


@SQLITE_ONLY
def test_connect_stream_error_is_in_the_end_of_stream(web: WebServer) -> None:
    [end] = connect_stream(web, MEMORY + "RecallMemories", {"parent": "nobody", "query": "x"})
    assert end["error"]["code"] == "invalid_argument"
    assert {d["type"] for d in end["error"]["details"]} >= {"google.rpc.ErrorInfo"}


@SQLITE_ONLY
def test_malformed_json_is_invalid_argument_naming_the_request(web: WebServer) -> None:
    reply = post(web, MEMORY + "GetMemory", b'{"name": ', "application/json")
    assert (reply.status, reply.json()["code"]) == (400, "invalid_argument")
    bad_request = decoded_details(reply.json()["details"])["google.rpc.BadRequest"]
    assert isinstance(bad_request, error_details_pb2.BadRequest)
    assert [v.field for v in bad_request.field_violations] == ["request"]


@SQLITE_ONLY
def test_client_streaming_and_unknown_methods_are_unimplemented(web: WebServer) -> None:
    reply = post(web, "/mnemo.v1.GovernanceService/ImportUserData", b"{}", "application/json")
    assert (reply.status, reply.json()["code"]) == (501, "unimplemented")
    assert "gRPC port" in reply.json()["message"]
    unknown = grpc_web_call(web, "/mnemo.v1.MemoryService/Nope", mm.GetMemoryRequest())
    assert unknown.status == 12  # UNIMPLEMENTED


@SQLITE_ONLY
def test_unsupported_content_type_is_415(web: WebServer) -> None:
    reply = post(web, MEMORY + "GetMemory", b"name=x", "application/x-www-form-urlencoded")
    assert reply.status == 415


# ------------------------------------------------------------------ auth


@pytest.fixture
def keys() -> SigningKeys:
    return SigningKeys.hs256()


@pytest.fixture
def auth_web(database_url: str, tmp_path: Path, keys: SigningKeys) -> Iterator[WebServer]:
    with web_server(database_url, **keys.server_settings(tmp_path)) as server:
        yield server


@SQLITE_ONLY
def test_authorization_header_reaches_the_grpc_port(auth_web: WebServer, keys: SigningKeys) -> None:
    alice = f"Bearer {keys.token('alice')}"
    assert create_memory(auth_web, "alice", "Mine", authorization=alice).status == 200

    missing = create_memory(auth_web, "alice", "Mine")
    assert (missing.status, missing.json()["code"]) == (401, "unauthenticated")

    request = mm.CreateMemoryRequest(parent="users/alice", memory=mm.Memory(text="x"))
    assert grpc_web_call(auth_web, MEMORY + "CreateMemory", request).status == 16

    # Another user's data is answered as not existing, as on the gRPC port.
    bob = f"Bearer {keys.token('bob')}"
    other = create_memory(auth_web, "alice", "Not mine", authorization=bob)
    assert (other.status, other.json()["code"]) == (404, "not_found")


# ------------------------------------------------------------------ CORS


def preflight(server: WebServer, origin: str) -> Reply:
    connection = server.connection()
    try:
        connection.request(
            "OPTIONS",
            MEMORY + "CreateMemory",
            headers={
                "origin": origin,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type,authorization,x-grpc-web",
            },
        )
        response = connection.getresponse()
        return Reply(response.status, _lowered(response.getheaders()), response.read())
    finally:
        connection.close()


@SQLITE_ONLY
def test_cors_preflight_allows_a_listed_origin(web: WebServer) -> None:
    reply = preflight(web, ORIGIN)
    assert reply.status == 204
    assert reply.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in reply.headers["access-control-allow-methods"]
    assert "authorization" in reply.headers["access-control-allow-headers"]

    served = create_memory(web, "alice", "From the page", origin=ORIGIN)
    assert served.status == 200
    assert served.headers["access-control-allow-origin"] == ORIGIN
    exposed = served.headers["access-control-expose-headers"]
    for name in ("grpc-status", "grpc-message", "grpc-status-details-bin"):
        assert name in exposed


@SQLITE_ONLY
def test_cors_refuses_an_origin_not_listed(web: WebServer) -> None:
    reply = preflight(web, "https://evil.example")
    assert reply.status == 403
    assert "access-control-allow-origin" not in reply.headers
    refused = create_memory(web, "alice", "From elsewhere", origin="https://evil.example")
    assert refused.status == 403
    assert "access-control-allow-origin" not in refused.headers


@SQLITE_ONLY
def test_cors_star_allows_any_origin(database_url: str) -> None:
    with web_server(database_url, web_cors_origins=("*",)) as web:
        assert preflight(web, "https://any.example").status == 204


@SQLITE_ONLY
def test_a_body_over_the_request_limit_is_refused_unread(database_url: str) -> None:
    with web_server(database_url, max_request_bytes=300_000) as web:
        body = mm.GetMemoryRequest(name="x" * 400_000).SerializeToString()
        reply = post(web, MEMORY + "GetMemory", body, "application/proto")
        assert (reply.status, reply.json()["code"]) == (400, "invalid_argument")
        info = decoded_details(reply.json()["details"])["google.rpc.ErrorInfo"]
        assert isinstance(info, error_details_pb2.ErrorInfo)
        assert (info.reason, info.metadata["limit_bytes"]) == ("FIELD_TOO_LARGE", "300000")


# ------------------------------------------------------------------ the console


def fetch(server: WebServer, method: str, path: str) -> Reply:
    connection = server.connection()
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return Reply(response.status, _lowered(response.getheaders()), response.read())
    finally:
        connection.close()


@SQLITE_ONLY
def test_the_web_port_serves_the_memory_console(web: WebServer) -> None:
    moved = fetch(web, "GET", "/console")
    assert (moved.status, moved.headers["location"]) == (308, "/console/")
    page = fetch(web, "GET", "/console/")
    assert page.status == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert b'src="./console.js"' in page.body
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    script = fetch(web, "GET", "/console/console.js")
    assert script.status == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    head = fetch(web, "HEAD", "/console/console.css")
    assert (head.status, head.body) == (200, b"")
    assert int(head.headers["content-length"]) > 0
    assert fetch(web, "GET", "/console/secrets.txt").status == 404
    assert fetch(web, "GET", "/consoles").status == 405


@SQLITE_ONLY
def test_the_ports_root_leads_to_the_console_and_a_favicon_is_no_error(web: WebServer) -> None:
    root = fetch(web, "GET", "/")
    assert (root.status, root.headers["location"]) == (308, "/console/")
    icon = fetch(web, "GET", "/favicon.ico")
    assert (icon.status, icon.body) == (204, b"")


@SQLITE_ONLY
def test_a_call_from_the_web_ports_own_origin_needs_no_cors_listing(web: WebServer) -> None:
    own = f"http://127.0.0.1:{web.port}"
    served = create_memory(web, "alice", "From the console", origin=own)
    assert served.status == 200
    assert "access-control-allow-origin" not in served.headers
    other_port = f"http://127.0.0.1:{web.port + 1}"
    assert create_memory(web, "alice", "From elsewhere", origin=other_port).status == 403


# ------------------------------------------------------------------ TLS


@SQLITE_ONLY
def test_the_web_port_serves_tls_and_requires_client_certificates_with_mtls(
    database_url: str, tmp_path: Path
) -> None:
    ca = CertificateAuthority("web test CA")
    cert_file, key_file = ca.issue("localhost", server=True).write(tmp_path, "server")
    client_cert, client_key = ca.issue("browser").write(tmp_path, "client")
    tls = {
        "tls_cert_file": cert_file,
        "tls_key_file": key_file,
        "tls_client_ca_file": ca.write(tmp_path),
    }
    with web_server(database_url, **tls) as web:
        trusting = ssl.create_default_context(cafile=str(ca.write(tmp_path)))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _health_over_https(web.port, trusting)
        trusting.load_cert_chain(str(client_cert), str(client_key))
        assert _health_over_https(web.port, trusting) == {"status": "SERVING"}


def _health_over_https(port: int, context: ssl.SSLContext) -> Any:
    connection = http.client.HTTPSConnection(
        "127.0.0.1", port, timeout=HTTP_TIMEOUT_S, context=context
    )
    try:
        connection.request(
            "POST",
            "/grpc.health.v1.Health/Check",
            body=b"{}",
            headers={"content-type": "application/json"},
        )
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


# ------------------------------------------------------------------ configuration


def test_web_options_are_parsed_and_checked() -> None:
    # "*" under --auth none needs its override (tests/security/test_startup.py).
    settings = resolve(
        {
            "web_listen": "127.0.0.1:8080",
            "web_cors_origins": "https://a.example, *",
            "allow_unauthenticated_any_origin": "true",
        },
        {},
    )
    assert (settings.web_listen, settings.web_cors_origins) == (
        "127.0.0.1:8080",
        ("https://a.example", "*"),
    )
    with pytest.raises(ConfigError, match="--web-cors-origins"):
        resolve({"web_cors_origins": "a.example"}, {})
    with pytest.raises(ConfigError, match="--web-listen 0.0.0.0:8080"):
        resolve({"web_listen": "0.0.0.0:8080"}, {})
    allowed = resolve(
        {"web_listen": "0.0.0.0:8080", "allow_unauthenticated_non_loopback": "true"}, {}
    )
    assert allowed.web_listen == "0.0.0.0:8080"
