"""Embedders: the configuration factory, the built-in hashing embedder and the
optional static model that ships inside a PyPI package (never downloaded)."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import pytest

from mnemo_server.api.memories.requests import BATCH_FIELDS
from mnemo_server.api.memories.rules import embedding_violations
from mnemo_server.domain.embedding import (
    Embedder,
    EmbedderConfigError,
    dimension_mismatch,
    embedder_unavailable,
)
from mnemo_server.domain.errors import Entry, MnemoError, Part
from mnemo_server.domain.memory_models import Embedding
from mnemo_server.domain.usecases.embedder_calls import EmbedderCalls
from mnemo_server.domain.usecases.memories import QUERY_CACHE_SIZE, QueryEmbedding
from mnemo_server.embedders import load_embedder
from mnemo_server.embedders.hashing import HashingEmbedder
from mnemo_server.embedders.static_model import StaticModelEmbedder
from tests.support.vectors import cosine, user_vectors


class FixedEmbedder:
    """A caller's own embedder, loaded by import path in the tests below."""

    model = "fixed-2"
    dimensions = 2

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [(float(len(t)), 1.0) for t in texts]


class NotAnEmbedder:
    model = "x"


@pytest.mark.parametrize("spec", [None, "", "none", "  none "])
def test_no_embedder(spec: str | None) -> None:
    assert load_embedder(spec) is None


def test_import_path_loads_a_custom_class() -> None:
    embedder = load_embedder(f"{__name__}:FixedEmbedder")
    assert isinstance(embedder, FixedEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder.embed(["abc"]) == [(3.0, 1.0)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("word2vec", "unknown embedder"),
        (f"{__name__}:NotAnEmbedder", "does not provide"),
        (f"{__name__}:Missing", "cannot import"),
        ("no_such_module_xyz:Thing", "cannot import"),
        ("hashing:abc", "must be a number"),
        ("hashing:0", "1..4096"),
        ("hashing:5000", "1..4096"),
    ],
)
def test_bad_specs_are_refused_with_the_fix(spec: str, message: str) -> None:
    with pytest.raises(EmbedderConfigError, match=message):
        load_embedder(spec)


def test_hashing_embedder_is_deterministic_unit_length_and_word_based() -> None:
    embedder = load_embedder("hashing:64")
    assert isinstance(embedder, HashingEmbedder)
    assert (embedder.model, embedder.dimensions) == ("mnemo-hashing-v2-64", 64)
    first = embedder.embed(["The user likes sushi", "likes SUSHI!", "car insurance", ""])
    assert first == HashingEmbedder(64).embed(
        ["The user likes sushi", "likes SUSHI!", "car insurance", ""]
    )
    for vector in first:
        assert len(vector) == 64
        assert math.isclose(math.hypot(*vector), 1.0)
        assert embedding_violations(Embedding(embedder.model, vector), "e") == []
    assert cosine(first[0], first[1]) > cosine(first[0], first[2])
    assert embedder.embed([]) == []
    assert load_embedder("hashing").dimensions == 256  # type: ignore[union-attr]


def test_errors_raised_around_embedders() -> None:
    error = embedder_unavailable()
    assert error.reason == "EMBEDDER_UNAVAILABLE"
    assert "query_embedding" in error.message
    mismatch = dimension_mismatch(Entry(Part.EMBEDDING, 2), expected=384, got=3)
    assert mismatch.reason == "EMBEDDING_DIMENSION_MISMATCH"
    assert mismatch.metadata == {"expected": "384", "got": "3"}
    assert mismatch.violations == ()  # the domain names no request field
    located = BATCH_FIELDS.located(mismatch)
    assert [v.field for v in located.violations] == ["requests[2].memory.embedding.values"]
    assert located.message.startswith("requests[2].memory.embedding.values has 3 values")


def test_static_model_without_its_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "static_model", None)  # makes the import fail
    with pytest.raises(EmbedderConfigError, match=r"mnemo-server\[embed\]"):
        load_embedder("static-model")


def test_static_model_embeds_offline_with_real_semantics() -> None:
    pytest.importorskip("static_model", reason="optional extra mnemo-server[embed]")
    embedder = load_embedder("static-model")
    assert isinstance(embedder, StaticModelEmbedder)
    assert embedder.model == "tokenlearn-static-model-0.1.1"
    assert embedder.dimensions == 64
    texts = [
        "The user loves sushi",
        "The user lives in Oslo",
        "The user has a dog",
        "The user is allergic to peanuts",
    ]
    vectors = embedder.embed(texts)
    assert vectors == embedder.embed(texts)
    for vector in vectors:
        assert embedding_violations(Embedding(embedder.model, vector), "e") == []
    index = user_vectors(vectors)
    # No word in common with the entry it should find: only the model knows.
    assert index.nearest(embedder.embed(["puppy"])[0], 1, ["c"])[0][0] == "v002"
    assert index.nearest(embedder.embed(["nut allergy"])[0], 1, ["c"])[0][0] == "v003"
    assert embedder.embed([]) == []


class CountingEmbedder:
    """Counts the texts it embeds, as queries and as documents."""

    model = "counting-2"
    dimensions = 2

    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [(float(len(t)), 1.0) for t in texts]

    def embed_queries(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.queries.extend(texts)
        return [(1.0, float(len(t))) for t in texts]


async def test_query_vectors_use_embed_queries_and_are_cached() -> None:
    embedder = CountingEmbedder()
    embedding = QueryEmbedding(EmbedderCalls(embedder))
    first = await embedding.embed_query("where does she live?")
    assert first == Embedding("counting-2", (1.0, 20.0))  # embed_queries, not embed
    assert await embedding.embed_query("where does she live?") == first
    assert embedder.queries == ["where does she live?"]  # the repeat came from the cache
    for i in range(QUERY_CACHE_SIZE):
        await embedding.embed_query(f"q{i}")
    await embedding.embed_query("where does she live?")  # evicted: embedded again
    assert embedder.queries.count("where does she live?") == 2
    with pytest.raises(MnemoError) as refused:
        await QueryEmbedding(None).embed_query("x")
    assert refused.value.reason == "EMBEDDER_UNAVAILABLE"
