"""An embedder over any OpenAI-compatible ``POST /v1/embeddings`` endpoint:
OpenAI, Azure OpenAI, Ollama, vLLM, text-embeddings-inference, LiteLLM.

Spec ``openai:MODEL`` (``--embedder``), with ``--embedder-url`` (the API's
base URL, default ``https://api.openai.com/v1``), the key from
``--embedder-key-file`` or the environment (``MNEMO_EMBEDDER_API_KEY``, else
``OPENAI_API_KEY``; none for a local server that wants none),
``--embedder-dimensions`` (asked of models that can shorten their vectors,
such as text-embedding-3; 0: the model's own) and
``--embedder-timeout-seconds``.

Documents are sent ``MAX_INPUTS`` texts per request; a request that times
out, cannot connect, or answers 408, 409, 429 or 5xx is retried up to
``RETRIES`` times with exponential backoff (a ``Retry-After`` of at most
``MAX_RETRY_AFTER`` seconds is honoured); any other answer fails at once.
Queries (recall) and the near-duplicate check's documents (``embed_now``)
get one attempt of ``QUERY_TIMEOUT`` seconds at most: a caller never waits
long for a provider (recall falls back to lexical).

The provider is outside the trust boundary (docs/operations.md, "Threat
model"):

- **One total deadline per request.** ``--embedder-timeout-seconds`` (at
  most ``QUERY_TIMEOUT`` for a waiting caller) bounds the whole request —
  connecting, sending, the headers and the whole body — not each read: a
  provider that trickles its answer a byte at a time is cut off at the
  deadline (``_Watchdog`` shuts the socket down), and the thread that
  waited for it is free again.
- **A bounded answer.** An answer is read up to ``answer_cap(texts,
  dimensions)`` bytes and no further: ``CAP_BYTES_PER_VALUE`` bytes per
  value of each vector (a float written as JSON takes at most 24), plus
  ``CAP_BYTES_PER_TEXT`` per text and ``CAP_BASE_BYTES`` for the rest. A
  ``Content-Length`` above the cap is refused before reading; a body
  without one is cut at the cap. For one query of 384 values the cap is
  about 77 KB; for a batch of 256 texts of 1,536 values, 12.8 MB. An error
  answer is read up to ``ERROR_BYTES``.
- **Checked vectors.** Each answer must hold one vector per text, each of
  the model's dimension, finite in float32, not all zeros
  (``domain.vectors.vector_problem``); anything else fails the request
  (``malformed``) and nothing of it is stored.
- **Nothing it says reaches a caller.** Failures are
  ``EmbeddingRequestFailed`` (a ``domain.embedding.EmbedderFailure`` whose
  ``kind`` is all a caller learns); the message, for the log, carries the
  HTTP status and at most ``ERROR_EXCERPT`` characters of the provider's
  error message with the key and anything credential-shaped redacted
  (``domain.redaction``), and names the endpoint by scheme, host and port
  only (never a user or password in the URL).

Vectors come back L2-normalised (cosine is all recall uses).

The stdlib's ``http.client`` does the HTTP: one short JSON POST per batch,
from the background embedder's thread or the serving path's bounded pool
(``domain.usecases.memories.EmbedderCalls``), needs neither a connection
pool nor an event loop, and adds no dependency.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import itertools
import json
import math
import os
import random
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemo_server.domain.embedding import EmbedderConfigError, EmbedderFailure
from mnemo_server.domain.limits import MAX_EMBEDDING_DIMENSIONS
from mnemo_server.domain.redaction import redact
from mnemo_server.domain.vectors import vector_problem

__all__ = ["EmbeddingRequestFailed", "RemoteEmbedder", "RemoteSettings", "answer_cap"]

MAX_INPUTS = 256
"""Texts per request (OpenAI takes 2048; local servers often far fewer)."""
RETRIES = 4
MAX_RETRY_AFTER = 10.0
QUERY_TIMEOUT = 5.0
DEFAULT_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("MNEMO_EMBEDDER_API_KEY", "OPENAI_API_KEY")
_RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504})

CAP_BYTES_PER_VALUE = 32
CAP_BYTES_PER_TEXT = 512
CAP_BASE_BYTES = 64 * 1024
ERROR_BYTES = 4096
"""The most of an error answer read (its message goes to the log, redacted)."""
ERROR_EXCERPT = 200
_READ_CHUNK = 64 * 1024


def answer_cap(texts: int, dimensions: int) -> int:
    """The most bytes an answer of ``texts`` vectors of ``dimensions``
    values may take (see the module doc); ``dimensions`` 0 (not known
    yet): ``MAX_EMBEDDING_DIMENSIONS``."""
    values = dimensions or MAX_EMBEDDING_DIMENSIONS
    return CAP_BASE_BYTES + texts * (CAP_BYTES_PER_TEXT + CAP_BYTES_PER_VALUE * values)


class EmbeddingRequestFailed(EmbedderFailure):
    """The endpoint refused the request, could not be reached in time, or
    answered something unusable (after the retries); ``status`` is the HTTP
    status, 0 for no answer. The message is safe to log (module doc)."""

    def __init__(
        self, message: str, status: int = 0, retry_after: float | None = None, kind: str = ""
    ) -> None:
        super().__init__(message, kind or _kind(status))
        self.status = status
        self.retry_after = retry_after


def _kind(status: int) -> str:
    if status == 0:
        return "unreachable"
    if status in (408, 504):
        return "timeout"
    if status in (409, 429, 500, 502, 503):
        return "unreachable" if status >= 500 else "busy"
    return "refused"


class _Watchdog:
    """Shuts down the sockets of requests past their deadline: one daemon
    thread, woken when a nearer deadline is watched, that ends after
    ``LINGER_SECONDS`` with nothing to watch (a server that stopped leaves
    no thread behind) and starts again with the next request."""

    LINGER_SECONDS = 0.5

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._due: list[tuple[float, int, socket.socket]] = []
        self._live: set[int] = set()
        self._fired: set[int] = set()
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, sock: socket.socket, deadline: float) -> int:
        """Shut ``sock`` down at ``deadline`` (``time.monotonic``) unless
        ``done`` is called first; the watch's id."""
        with self._lock:
            watch_id = next(self._ids)
            heapq.heappush(self._due, (deadline, watch_id, sock))
            self._live.add(watch_id)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mnemo-embedder-deadlines", daemon=True
                )
                self._thread.start()
            self._lock.notify()
            return watch_id

    def done(self, watch_id: int) -> bool:
        """Stop watching; whether the deadline had passed (the socket was shut)."""
        with self._lock:
            self._live.discard(watch_id)
            self._lock.notify()  # the thread may be waiting for this deadline
            if watch_id in self._fired:
                self._fired.discard(watch_id)
                return True
            return False

    def _run(self) -> None:
        with self._lock:
            while True:
                while self._due and self._due[0][1] not in self._live:
                    heapq.heappop(self._due)
                if not self._due:
                    if not self._lock.wait(self.LINGER_SECONDS) and not self._due:
                        self._thread = None
                        return
                    continue
                deadline, watch_id, sock = self._due[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._lock.wait(wait)
                    continue
                heapq.heappop(self._due)
                self._live.discard(watch_id)
                self._fired.add(watch_id)
                # The plain socket's shutdown, under TLS too: it wakes a
                # blocked read without touching the TLS object another
                # thread is reading with.
                with contextlib.suppress(OSError):  # already closed
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


_WATCHDOG = _Watchdog()


@dataclass(frozen=True)
class RemoteSettings:
    """What ``RemoteEmbedder`` needs (see the module doc)."""

    model: str
    url: str = DEFAULT_URL
    key: str = ""
    dimensions: int = 0
    timeout_seconds: float = 30.0

    @classmethod
    def of(
        cls,
        model: str,
        *,
        url: str = DEFAULT_URL,
        key_file: Path | None = None,
        dimensions: int = 0,
        timeout_seconds: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> RemoteSettings:
        """Settings with the key read from ``key_file`` or the environment.
        Raises ``EmbedderConfigError`` for an unreadable key file or a URL
        that is not http(s)."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise EmbedderConfigError(
                f"--embedder-url must be an http(s) URL (got {_endpoint_name(url)!r})"
            )
        key = ""
        if key_file is not None:
            try:
                key = key_file.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as error:
                raise EmbedderConfigError(
                    f"cannot read --embedder-key-file {str(key_file)!r}: "
                    f"{getattr(error, 'strerror', None) or 'not UTF-8 text'}"
                ) from None
        else:
            environment = os.environ if env is None else env
            key = next((environment[v] for v in KEY_VARIABLES if environment.get(v)), "")
        return cls(model, url.rstrip("/"), key, dimensions, timeout_seconds)


def _endpoint_name(url: str) -> str:
    """``url`` as logs name it: scheme, host and port (no user, password,
    path or query)."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme or '?'}://{host}{port}"


class RemoteEmbedder:
    """Embeds through an OpenAI-compatible endpoint (see the module doc).

    Learns the vectors' dimension at construction (from
    ``--embedder-dimensions``, else by embedding one word). Raises
    ``EmbedderConfigError`` when the endpoint cannot be reached then.
    """

    def __init__(self, settings: RemoteSettings) -> None:
        self._settings = settings
        parsed = urllib.parse.urlsplit(settings.url)
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname or ""
        self._port = parsed.port
        self._path = f"{parsed.path.rstrip('/')}/embeddings"
        self._name = _endpoint_name(settings.url)
        self._secrets = tuple(s for s in (settings.key, parsed.password or "") if s)
        suffix = f"-{settings.dimensions}d" if settings.dimensions else ""
        self._model = f"{settings.model}{suffix}"
        self._dimensions = settings.dimensions
        if not settings.dimensions:
            try:
                (probe,) = self._request(["dimensions"], settings.timeout_seconds, RETRIES)
            except EmbeddingRequestFailed as error:
                raise EmbedderConfigError(
                    f"cannot reach the embedder at {self._name} to learn its vectors' size "
                    f"({error}); give --embedder-dimensions to start without asking it"
                ) from None
            self._dimensions = len(probe)

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Document vectors, ``MAX_INPUTS`` per request, retried. Raises
        ``EmbeddingRequestFailed``."""
        result: list[tuple[float, ...]] = []
        for start in range(0, len(texts), MAX_INPUTS):
            chunk = list(texts[start : start + MAX_INPUTS])
            result += self._request(chunk, self._settings.timeout_seconds, RETRIES)
        return result

    def embed_queries(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Query vectors: one attempt, ``QUERY_TIMEOUT`` seconds at most."""
        return self._request(list(texts), self._prompt_timeout(), 0)

    def embed_now(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Document vectors for a caller who waits (the near-duplicate
        check): one attempt per request, ``QUERY_TIMEOUT`` seconds at most."""
        result: list[tuple[float, ...]] = []
        for start in range(0, len(texts), MAX_INPUTS):
            result += self._request(
                list(texts[start : start + MAX_INPUTS]), self._prompt_timeout(), 0
            )
        return result

    def _prompt_timeout(self) -> float:
        return min(self._settings.timeout_seconds, QUERY_TIMEOUT)

    # ------------------------------------------------------------ the wire

    def _request(self, texts: list[str], timeout: float, retries: int) -> list[tuple[float, ...]]:
        body: dict[str, Any] = {
            "model": self._settings.model,
            "input": texts,
            "encoding_format": "float",
        }
        if self._settings.dimensions:
            body["dimensions"] = self._settings.dimensions
        payload = json.dumps(body).encode()
        cap = answer_cap(len(texts), self._dimensions)
        attempt = 0
        while True:
            try:
                return self._vectors(self._post(payload, timeout, cap), len(texts))
            except EmbeddingRequestFailed as error:
                retryable = error.status == 0 or error.status in _RETRYABLE
                if not retryable or error.kind == "too_large" or attempt >= retries:
                    raise
                wait = error.retry_after
                if wait is None:
                    wait = min(0.5 * 2**attempt, 8.0) * (0.5 + random.random() / 2)
                time.sleep(wait)
                attempt += 1

    def _post(self, payload: bytes, timeout: float, cap: int) -> Any:
        """The JSON answer of one POST, all of it within ``timeout`` seconds
        and ``cap`` bytes. Raises ``EmbeddingRequestFailed``."""
        deadline = time.monotonic() + timeout
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._settings.key:
            headers["Authorization"] = f"Bearer {self._settings.key}"
            headers["api-key"] = self._settings.key  # Azure OpenAI's header
        connection: http.client.HTTPConnection
        if self._https:
            connection = http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        watch: int | None = None
        late = False
        try:
            try:
                connection.connect()
                assert connection.sock is not None
                watch = _WATCHDOG.watch(connection.sock, deadline)
                connection.request("POST", self._path, payload, headers)
                response = connection.getresponse()
                if response.status != 200:
                    raise self._refusal(response, self._read(response, ERROR_BYTES, strict=False))
                data = self._read(response, cap, strict=True)
            finally:
                late = watch is not None and _WATCHDOG.done(watch)
        except (OSError, http.client.HTTPException) as error:
            if late or time.monotonic() >= deadline:
                raise self._late(timeout) from None
            raise EmbeddingRequestFailed(
                f"{self._name}: {redact(str(error), self._secrets)[:ERROR_EXCERPT]}"
            ) from None
        finally:
            connection.close()
        if late:  # what was read ended when the socket was shut down
            raise self._late(timeout)
        try:
            return json.loads(data)
        except ValueError:
            raise EmbeddingRequestFailed(
                f"{self._name} answered no JSON", 200, kind="malformed"
            ) from None

    def _late(self, timeout: float) -> EmbeddingRequestFailed:
        return EmbeddingRequestFailed(
            f"{self._name} did not answer within {timeout:g} s", kind="timeout"
        )

    def _read(self, response: http.client.HTTPResponse, cap: int, *, strict: bool) -> bytes:
        """The body, at most ``cap`` bytes; ``strict``: a longer body (or a
        declared ``Content-Length`` above ``cap``) fails ``too_large``,
        else it is cut."""
        declared = response.getheader("Content-Length")
        if strict and declared is not None and declared.strip().isdigit() and int(declared) > cap:
            raise EmbeddingRequestFailed(
                f"{self._name} announced an answer of {int(declared)} bytes; at most {cap} "
                "are read",
                200,
                kind="too_large",
            )
        parts: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = response.read1(min(_READ_CHUNK, cap + 1 - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        if size > cap and strict:
            raise EmbeddingRequestFailed(
                f"{self._name} answered more than {cap} bytes", 200, kind="too_large"
            )
        return b"".join(parts)[:cap]

    def _refusal(self, response: http.client.HTTPResponse, data: bytes) -> EmbeddingRequestFailed:
        header = (response.getheader("Retry-After") or "").strip()
        said = _error_message(data)
        excerpt = redact(said, self._secrets)[:ERROR_EXCERPT]
        return EmbeddingRequestFailed(
            f"{self._name} answered {response.status}" + (f": {excerpt}" if excerpt else ""),
            response.status,
            min(float(header), MAX_RETRY_AFTER) if header.isdigit() else None,
        )

    def _vectors(self, answer: Any, count: int) -> list[tuple[float, ...]]:
        try:
            items = sorted(answer["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError, OverflowError):
            raise EmbeddingRequestFailed(
                f"{self._name}: the answer has no data[].embedding", 200, kind="malformed"
            ) from None
        if len(vectors) != count:
            raise EmbeddingRequestFailed(
                f"{self._name}: {len(vectors)} vectors for {count} texts", 200, kind="malformed"
            )
        result = []
        for index, vector in enumerate(vectors):
            expected = self._dimensions or max(len(vector), 1)
            problem = vector_problem(vector, expected)
            if problem is None and expected > MAX_EMBEDDING_DIMENSIONS:
                problem = f"has more than {MAX_EMBEDDING_DIMENSIONS} values"
            if problem is not None:
                raise EmbeddingRequestFailed(
                    f"{self._name}: the vector of text {index} {problem}", 200, kind="malformed"
                )
            length = math.sqrt(sum(x * x for x in vector))
            result.append(tuple(x / length for x in vector))
        return result


def _error_message(data: bytes) -> str:
    """What an error answer says: its ``error.message`` (OpenAI's shape) or
    ``message`` or ``detail``, else the body as text."""
    text = data.decode("utf-8", "replace")
    try:
        answer = json.loads(text)
    except ValueError:
        return " ".join(text.split())
    if isinstance(answer, dict):
        error = answer.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for field in ("message", "detail", "error"):
            if isinstance(answer.get(field), str):
                return str(answer[field])
    return " ".join(text.split())
