"""A real OpenAI-compatible embeddings endpoint on 127.0.0.1 for the remote
embedder's tests: ``POST /v1/embeddings`` computes real vectors with the
model Mnemo ships (``embedders.packaged``), as OpenAI answers them (``data``
of ``{"index", "embedding"}``), and can be told to fail: answer 503 to the
next N requests, refuse every request (down), or refuse a text containing
a marker with 400 (as a provider refuses an over-long input).

It can also be told to misbehave as a hostile or broken provider would
(``misbehave``, see ``Misbehaviour``): echo the caller's credentials in
its error body, answer vectors of the wrong length or with NaN, infinity,
values beyond float32 or all zeros, trickle its answer one byte at a time,
or answer a body far larger than any batch needs. Every text it received
is kept (``texts``), whatever it answered."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mnemo_server.embedders.onnx import OnnxEmbedder
from mnemo_server.embedders.packaged import packaged_model

__all__ = ["Endpoint", "Misbehaviour", "embedding_endpoint", "shipped_model"]

TRICKLE_SECONDS = 0.5
"""Between two bytes of a trickled answer."""
TRICKLE_LIMIT_SECONDS = 60.0
"""The longest the endpoint trickles one answer (its tests end sooner)."""
_FLOOD_CHUNK = b" " * 65536


class Misbehaviour:
    """What ``Endpoint.misbehave`` may be set to (``""``: behave)."""

    ECHO_KEY = "echo-key"
    """401 whose message quotes the ``Authorization`` header it received."""
    WRONG_LENGTH = "wrong-length"
    """Vectors one value shorter than the model's."""
    NAN = "nan"
    INFINITY = "infinity"
    BEYOND_FLOAT32 = "beyond-float32"
    """A value of 1e39: finite as JSON, infinite as the float32 Mnemo keeps."""
    ZEROS = "zeros"
    TRICKLE = "trickle"
    """200 with a large ``Content-Length``, then one byte every ``TRICKLE_SECONDS``."""
    FLOOD = "flood"
    """200 and ``flood_bytes`` of JSON whitespace before the answer, no
    ``Content-Length`` (the body ends when the connection closes)."""
    FLOOD_DECLARED = "flood-declared"
    """As ``FLOOD``, with the honest ``Content-Length`` of it."""


_MODEL: list[OnnxEmbedder] = []


def shipped_model() -> OnnxEmbedder:
    """The shipped model, loaded once per test process."""
    if not _MODEL:
        files, digest = packaged_model()
        _MODEL.append(OnnxEmbedder(files, digest=digest))
    return _MODEL[0]


@dataclass
class Endpoint:
    """The running endpoint: its base URL and what it saw and is told."""

    url: str
    key: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_next: int = 0
    down: bool = False
    refuse_marker: str = ""
    misbehave: str = ""
    flood_bytes: int = 300 * 1024 * 1024
    written: int = 0
    """Bytes of the last flooded or trickled answer the endpoint could write."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def texts(self) -> list[str]:
        """Every input text received so far, in order."""
        with self.lock:
            bodies = list(self.requests)
        return [t for body in bodies for t in body.get("input") or [] if isinstance(t, str)]

    def saw(self, marker: str) -> bool:
        """Whether any text received so far contains ``marker``."""
        return any(marker in text for text in self.texts())

    def answer(self, body: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
            if self.misbehave == Misbehaviour.ECHO_KEY:
                return 401, {
                    "error": {
                        "message": f"Incorrect API key provided: {authorization}. You can "
                        "find your API key at https://platform.example/account/api-keys.",
                        "type": "invalid_request_error",
                    }
                }
            if self.key and authorization != f"Bearer {self.key}":
                return 401, {"error": {"message": "bad key", "type": "invalid_request_error"}}
            if self.down:
                return 503, {"error": {"message": "down"}}
            if self.fail_next > 0:
                self.fail_next -= 1
                return 503, {"error": {"message": "busy"}}
        texts = body.get("input")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 400, {"error": {"message": "input must be a list of strings"}}
        if self.refuse_marker and any(self.refuse_marker in t for t in texts):
            return 400, {"error": {"message": "input too long"}}
        vectors = shipped_model().embed(texts)
        dimensions = body.get("dimensions")
        if isinstance(dimensions, int) and dimensions > 0:
            vectors = [v[:dimensions] for v in vectors]
        answered = [_spoiled(list(v), self.misbehave) for v in vectors]
        # Out of order on purpose: a client must sort by index.
        data = [
            {"object": "embedding", "index": i, "embedding": v}
            for i, v in reversed(list(enumerate(answered)))
        ]
        return 200, {"object": "list", "data": data, "model": body.get("model")}


def _spoiled(vector: list[float], misbehaviour: str) -> list[float]:
    """``vector`` as a broken provider answers it (``Misbehaviour``)."""
    if misbehaviour == Misbehaviour.WRONG_LENGTH:
        return vector[:-1]
    if misbehaviour == Misbehaviour.NAN:
        return [float("nan"), *vector[1:]]
    if misbehaviour == Misbehaviour.INFINITY:
        return [float("inf"), *vector[1:]]
    if misbehaviour == Misbehaviour.BEYOND_FLOAT32:
        return [1e39, *vector[1:]]
    if misbehaviour == Misbehaviour.ZEROS:
        return [0.0] * len(vector)
    return vector


class _Handler(BaseHTTPRequestHandler):
    endpoint: Endpoint

    def do_POST(self) -> None:
        if self.path != "/v1/embeddings":
            self._send(404, {"error": {"message": "not found"}})
            return
        length = int(self.headers.get("Content-Length", "0"))
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self._send(400, {"error": {"message": "not JSON"}})
            return
        status, answer = self.endpoint.answer(body, self.headers.get("Authorization", ""))
        self._send(status, answer)

    def _send(self, status: int, answer: dict[str, Any]) -> None:
        # NaN and Infinity as Python's json writes them (as some servers do).
        data = json.dumps(answer).encode()
        misbehaviour = self.endpoint.misbehave
        if status == 200 and misbehaviour == Misbehaviour.TRICKLE:
            self._trickle(data)
            return
        if status == 200 and misbehaviour in (Misbehaviour.FLOOD, Misbehaviour.FLOOD_DECLARED):
            self._flood(data, declared=misbehaviour == Misbehaviour.FLOOD_DECLARED)
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(data)

    def _trickle(self, data: bytes) -> None:
        """A large ``Content-Length``, then one byte at a time until the
        client gives up (or ``TRICKLE_LIMIT_SECONDS``)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data) + 10_000_000))
        self.end_headers()
        self.endpoint.written = 0
        ends = time.monotonic() + TRICKLE_LIMIT_SECONDS
        body = data + b" " * 10_000_000
        try:
            for i in range(len(body)):
                if time.monotonic() > ends:
                    break
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                self.endpoint.written += 1
                time.sleep(TRICKLE_SECONDS)
        except OSError:
            pass
        self.close_connection = True

    def _flood(self, data: bytes, *, declared: bool) -> None:
        """``flood_bytes`` of whitespace, then the answer, for as long as the
        client reads."""
        size = self.endpoint.flood_bytes
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if declared:
            self.send_header("Content-Length", str(size + len(data)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        self.endpoint.written = 0
        try:
            while self.endpoint.written < size:
                chunk = _FLOOD_CHUNK[: size - self.endpoint.written]
                self.wfile.write(chunk)
                self.endpoint.written += len(chunk)
            self.wfile.write(data)
        except OSError:
            pass
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def embedding_endpoint(key: str = "") -> Iterator[Endpoint]:
    """An endpoint on a free loopback port, stopped at the end."""
    shipped_model()
    handler = type("Handler", (_Handler,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    endpoint = Endpoint(f"http://127.0.0.1:{server.server_address[1]}/v1", key)
    handler.endpoint = endpoint  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name="embedding-endpoint", daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
