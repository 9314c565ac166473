"""A real OpenAI-compatible embeddings endpoint on 127.0.0.1 for the remote
embedder's tests: ``POST /v1/embeddings`` computes real vectors with the
model Mnemo ships (``embedders.packaged``), as OpenAI answers them (``data``
of ``{"index", "embedding"}``), and can be told to fail: answer 503 to the
next N requests, refuse every request (down), or refuse a text containing
a marker with 400 (as a provider refuses an over-long input)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mnemo_server.embedders.onnx import OnnxEmbedder
from mnemo_server.embedders.packaged import packaged_model

__all__ = ["Endpoint", "embedding_endpoint", "shipped_model"]

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
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
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
        # Out of order on purpose: a client must sort by index.
        data = [
            {"object": "embedding", "index": i, "embedding": list(v)}
            for i, v in reversed(list(enumerate(vectors)))
        ]
        return 200, {"object": "list", "data": data, "model": body.get("model")}


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
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(data)

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
