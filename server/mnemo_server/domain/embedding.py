"""Server-side embedders as the domain knows them: the ``Embedder`` protocol,
the spec syntax, the checks of what an embedder answers, and the errors
semantic recall raises around them. The concrete embedders live in
``mnemo_server.embedders``.

Mnemo never downloads a model. An embedder either ships inside an installed
package or is the caller's own class. Configuration (``--embedder``; the
specs are loaded by ``mnemo_server.embedders.load_embedder``, checked here by
``check_spec``):

- ``"local"`` (the default): the ONNX model an installed package ships
  (``embedders.packaged``: bge-small-en-v1.5, int8);
- ``"onnx:<directory>"``: an ONNX model in a directory (``embedders.onnx``);
- ``None``, ``""`` or ``"none"``: no embedder; semantic recall then needs a
  client-supplied ``query_embedding`` (else ``EMBEDDER_UNAVAILABLE``);
- ``"hashing"`` or ``"hashing:<dimensions>"``: ``HashingEmbedder``
  (``embedders.hashing``), a dependency-free bag-of-stems embedder. It is
  *not* semantic (it only knows which words are shared); it exists to
  exercise server-side embedding end to end in tests and as a safe fallback;
- ``"static-model"``: ``StaticModelEmbedder`` (``embedders.static_model``),
  the 64-dimension static model baked into the optional PyPI package
  ``tokenlearn-static-model`` (install extra ``mnemo-server[embed]``);
  imported only when configured;
- ``"openai:<model>"``: an OpenAI-compatible ``/v1/embeddings`` endpoint
  (``embedders.remote``; ``--embedder-url`` and the other ``--embedder-*``
  settings);
- ``"package.module:ClassName"``: any class with ``model``, ``dimensions``
  and ``embed``, constructed without arguments.

Unknown or broken specs raise ``EmbedderConfigError`` (a ``ValueError``) at
start-up, with a message naming the fix.

An embedder may also offer ``embed_queries(texts)``, for models trained with
an instruction before queries (``query_vectors`` uses it when present), and
``embed_now(texts)``, document vectors for a caller who waits (one attempt,
a short deadline: ``prompt_vectors`` uses it when present).

What an embedder answers is checked before anything uses it
(``checked_vectors``: one vector per text, each a valid vector of the
model's ``dimensions``, ``domain.vectors.vector_problem``); an embedder that
fails raises, best an ``EmbedderFailure`` that says what kind of failure it
was. A caller never sees what an embedder or its provider said: the
``EMBEDDER_FAILED`` error names the kind only (docs/operations.md,
"Threat model").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from mnemo_server.domain.errors import Entry, FailedPrecondition, InvalidArgument, Unavailable
from mnemo_server.domain.vectors import vector_problem


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


class EmbedderFailure(Exception):
    """An embedder could not embed: ``kind`` is one of ``FAILURE_KINDS``
    (what a caller may be told); the message is for the log (an embedder
    keeps credentials out of it)."""

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind if kind in FAILURE_KINDS else "error"


FAILURE_KINDS = {
    "refused": "its provider refused the request",
    "unreachable": "its provider could not be reached",
    "timeout": "its provider did not answer in time",
    "busy": "it is busy with other calls",
    "too_large": "its provider's answer was larger than any answer may be",
    "malformed": "it answered something that is not one valid vector per text",
    "error": "it failed",
}
"""Each kind of ``EmbedderFailure``, as ``EMBEDDER_FAILED`` words it."""


def query_vectors(embedder: Embedder, texts: Sequence[str]) -> list[tuple[float, ...]]:
    """The checked vectors of ``texts`` as queries: ``embed_queries`` when the
    embedder has it, else ``embed``. Raises what the embedder raises, and
    ``EmbedderFailure`` (``malformed``) for an answer ``checked_vectors``
    refuses."""
    method = getattr(embedder, "embed_queries", None)
    vectors = method(texts) if callable(method) else embedder.embed(texts)
    return checked_vectors(embedder, texts, vectors)


def prompt_vectors(embedder: Embedder, texts: Sequence[str]) -> list[tuple[float, ...]]:
    """The checked document vectors of ``texts`` for a caller who waits:
    ``embed_now`` when the embedder has it, else ``embed``. Raises as
    ``query_vectors``."""
    method = getattr(embedder, "embed_now", None)
    vectors = method(texts) if callable(method) else embedder.embed(texts)
    return checked_vectors(embedder, texts, vectors)


def checked_vectors(
    embedder: Embedder, texts: Sequence[str], vectors: Sequence[Sequence[float]]
) -> list[tuple[float, ...]]:
    """``vectors`` as tuples, if they are one valid vector of the embedder's
    model per text (``domain.vectors.vector_problem``); else raises
    ``EmbedderFailure`` (``malformed``)."""
    if len(vectors) != len(texts):
        raise EmbedderFailure(f"{len(vectors)} vectors for {len(texts)} texts", "malformed")
    checked: list[tuple[float, ...]] = []
    for index, vector in enumerate(vectors):
        problem = vector_problem(vector, embedder.dimensions)
        if problem is not None:
            raise EmbedderFailure(f"the vector of text {index} {problem}", "malformed")
        checked.append(tuple(float(v) for v in vector))
    return checked


def failure_kind(error: BaseException) -> str:
    """The ``FAILURE_KINDS`` key of ``error`` (``error`` for an exception
    that is not an ``EmbedderFailure``)."""
    return error.kind if isinstance(error, EmbedderFailure) else "error"


class EmbedderConfigError(ValueError):
    """The configured embedder spec cannot be loaded."""


def embedder_unavailable() -> FailedPrecondition:
    """Semantic recall without a query embedding on a server with no embedder."""
    return FailedPrecondition(
        "semantic recall needs a query_embedding: this server has no embedder configured",
        reason="EMBEDDER_UNAVAILABLE",
    )


def embedder_failed(error: BaseException, what: str = "the query") -> Unavailable:
    """The server's embedder could not embed ``what`` (``EMBEDDER_FAILED``).
    The message names the kind of failure (``failure_kind``) and never
    repeats what the embedder or its provider said."""
    kind = failure_kind(error)
    return Unavailable(
        f"the server's embedder could not embed {what}: {FAILURE_KINDS[kind]}; retry later",
        reason="EMBEDDER_FAILED",
        metadata={"cause": kind},
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


SPEC_FORMS = (
    "none, local, onnx:DIRECTORY, openai:MODEL, hashing[:N], static-model or package.module:Class"
)


def check_spec(spec: str | None) -> str:
    """The normalised spec (``"none"`` for empty); raises
    ``EmbedderConfigError`` for a spec of no known form (nothing is loaded)."""
    name = (spec or "").strip() or "none"
    if name in ("none", "local", "static-model", "hashing"):
        return name
    if name.startswith("hashing:"):
        size = name.partition(":")[2]
        if not size.isdigit():
            raise EmbedderConfigError(f"hashing dimensions must be a number (got {size!r})")
        return name
    if name.startswith("onnx:"):
        if not name.partition(":")[2]:
            raise EmbedderConfigError("onnx: needs a model directory, as onnx:/path/to/model")
        return name
    if name.startswith("openai:"):
        if not name.partition(":")[2]:
            raise EmbedderConfigError(
                "openai: needs a model name, as openai:text-embedding-3-small"
            )
        return name
    module, colon, attribute = name.partition(":")
    if colon and module and attribute:
        return name
    raise EmbedderConfigError(f"unknown embedder {name!r}: use {SPEC_FORMS}")
