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
Queries (recall) get one attempt with ``QUERY_TIMEOUT`` seconds at most: a
recall never waits long for a provider (it falls back to lexical recall).
Vectors come back L2-normalised (cosine is all recall uses).

The stdlib's ``http.client`` does the HTTP: one short JSON POST per batch,
from the background embedder's thread, needs neither a connection pool nor
an event loop, and adds no dependency.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import random
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemo_server.domain.embedding import EmbedderConfigError

__all__ = ["EmbeddingRequestFailed", "RemoteEmbedder", "RemoteSettings"]

MAX_INPUTS = 256
"""Texts per request (OpenAI takes 2048; local servers often far fewer)."""
RETRIES = 4
MAX_RETRY_AFTER = 10.0
QUERY_TIMEOUT = 5.0
DEFAULT_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("MNEMO_EMBEDDER_API_KEY", "OPENAI_API_KEY")
_RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504})


class EmbeddingRequestFailed(Exception):
    """The endpoint refused the request or could not be reached (after the
    retries); ``status`` is the HTTP status, 0 for no answer."""

    def __init__(self, message: str, status: int = 0, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


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
            raise EmbedderConfigError(f"--embedder-url must be an http(s) URL (got {url!r})")
        key = ""
        if key_file is not None:
            try:
                key = key_file.read_text(encoding="utf-8").strip()
            except OSError as error:
                raise EmbedderConfigError(f"cannot read --embedder-key-file: {error}") from None
        else:
            environment = os.environ if env is None else env
            key = next((environment[v] for v in KEY_VARIABLES if environment.get(v)), "")
        return cls(model, url.rstrip("/"), key, dimensions, timeout_seconds)


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
        suffix = f"-{settings.dimensions}d" if settings.dimensions else ""
        self._model = f"{settings.model}{suffix}"
        if settings.dimensions:
            self._dimensions = settings.dimensions
        else:
            try:
                (probe,) = self._request(["dimensions"], settings.timeout_seconds, RETRIES)
            except EmbeddingRequestFailed as error:
                raise EmbedderConfigError(
                    f"cannot reach the embedder at {settings.url} to learn its vectors' size "
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
        timeout = min(self._settings.timeout_seconds, QUERY_TIMEOUT)
        return self._request(list(texts), timeout, 0)

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
        attempt = 0
        while True:
            try:
                return self._vectors(self._post(payload, timeout), len(texts))
            except EmbeddingRequestFailed as error:
                retryable = error.status == 0 or error.status in _RETRYABLE
                if not retryable or attempt >= retries:
                    raise
                wait = error.retry_after
                if wait is None:
                    wait = min(0.5 * 2**attempt, 8.0) * (0.5 + random.random() / 2)
                time.sleep(wait)
                attempt += 1

    def _post(self, payload: bytes, timeout: float) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._settings.key:
            headers["Authorization"] = f"Bearer {self._settings.key}"
            headers["api-key"] = self._settings.key  # Azure OpenAI's header
        connection: http.client.HTTPConnection
        if self._https:
            connection = http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        try:
            connection.request("POST", self._path, payload, headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise EmbeddingRequestFailed(f"{self._settings.url}: {error}") from None
        finally:
            connection.close()
        if response.status != 200:
            header = (response.getheader("Retry-After") or "").strip()
            raise EmbeddingRequestFailed(
                f"{self._settings.url} answered {response.status}: {data[:200]!r}",
                response.status,
                min(float(header), MAX_RETRY_AFTER) if header.isdigit() else None,
            )
        try:
            return json.loads(data)
        except ValueError:
            raise EmbeddingRequestFailed(f"{self._settings.url} answered no JSON") from None

    def _vectors(self, answer: Any, count: int) -> list[tuple[float, ...]]:
        try:
            items = sorted(answer["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError):
            raise EmbeddingRequestFailed("the answer has no data[].embedding") from None
        if len(vectors) != count:
            raise EmbeddingRequestFailed(f"{len(vectors)} vectors for {count} texts")
        result = []
        for vector in vectors:
            length = math.sqrt(sum(x * x for x in vector))
            result.append(tuple(x / length for x in vector) if length > 0 else tuple(vector))
        return result
