"""Server-side embedders through a real server started with ``embedder=...``:
entries saved without a vector get one, and semantic recall needs no query
vector."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import grpc
import pytest

from mnemo.v1 import memories_pb2 as pb
from mnemo_server.domain.embedding import EmbedderConfigError
from mnemo_server.embedders import load_embedder
from mnemo_server.embedders.packaged import packaged_model
from tests.api.memories import USER, Stub, create, recall, texts, vector
from tests.support.server import running_server

LEXICAL, SEMANTIC = pb.RECALL_SIGNAL_LEXICAL, pb.RECALL_SIGNAL_SEMANTIC


def test_the_hashing_embedder_embeds_saves_and_queries(database_url: str) -> None:
    with running_server(database_url, embedder="hashing:64") as target:
        with grpc.insecure_channel(target) as channel:
            stub = Stub(channel)
            dog = create(stub, "The user has a dog named Rex")
            create(stub, "Owns a boat", embedding=vector(1, 0, 0, 0))  # a client vector stays
            create(stub, "Lives near the harbour")

            plain = recall(stub, "dog", semantic=False)
            assert [list(h.signals) for h in plain] == [[LEXICAL]]
            fused = recall(stub, "dog", semantic=True)
            assert [h.memory for h in fused][:1] == [dog]
            assert list(fused[0].signals) == [LEXICAL, SEMANTIC]  # the entry got a vector
            client_model = recall(stub, "boat", semantic=True, query_embedding=vector(1, 0, 0, 0))
            assert [list(h.signals) for h in client_model] == [[LEXICAL, SEMANTIC]]

            context = stub.BuildContext(
                pb.BuildContextRequest(parent=USER, query="Rex the dog", semantic=True)
            )
            assert context.memories[0] == dog.name

            # New text, no new vector: the server embeds the new text (the old
            # text's vector is orthogonal to the query's).
            dog.text = "The user owns a kayak"
            stub.UpdateMemory(pb.UpdateMemoryRequest(memory=dog))
            (kayak,) = recall(stub, "kayak", semantic=True)
            assert list(kayak.signals) == [LEXICAL, SEMANTIC]


FACTS = (
    "The user likes green tea",
    "The user lives in Lisbon",
    "The user adopted a golden retriever last spring",
    "Drives a red car",
    "Works night shifts as a nurse at the city hospital",
)


@pytest.mark.parametrize(
    ("embedder", "questions"),
    [
        # The 64-dimension static model only knows words: a near synonym.
        ("static-model", {"puppy": "The user adopted a golden retriever last spring"}),
        # The default (``local``: the bge-small ONNX model a dependency ships) knows meaning.
        (
            "local",
            {
                "does she have a puppy?": "The user adopted a golden retriever last spring",
                "what is her profession?": "Works night shifts as a nurse at the city hospital",
            },
        ),
    ],
)
def test_a_shipped_model_recalls_by_meaning(
    database_url: str, embedder: str, questions: dict[str, str]
) -> None:
    """With no client vector: semantic recall finds what shares no word with the
    query, and leaving ``semantic`` unset on such a server fuses too. The
    ranking is what is checked here (``min_score`` 0: every match); what the
    default minimum relevance keeps is ``test_relevance_judgement.py``'s."""
    if embedder == "static-model":
        pytest.importorskip("static_model")
    with running_server(database_url, embedder=embedder) as target:
        with grpc.insecure_channel(target) as channel:
            stub = Stub(channel)
            for text in FACTS:
                create(stub, text)
            for question, expected in questions.items():
                assert recall(stub, question, semantic=False) == []  # no shared word
                hits = recall(stub, question, semantic=True, min_score=0.0)
                assert texts(hits)[0] == expected
                assert list(hits[0].signals) == [SEMANTIC]
                assert recall(stub, question, min_score=0.0) == hits  # unset: fused


def test_a_model_directory_is_loaded_and_checked(tmp_path: Path) -> None:
    """``onnx:DIR``: a model directory with its card; the name on its vectors
    carries the graph's digest; a directory without a card is refused."""
    files, _ = packaged_model()
    directory = tmp_path / "model"
    directory.mkdir()
    shutil.copy(files.graph, directory / "model.onnx")
    shutil.copy(files.tokenizer, directory / "tokenizer.json")
    with pytest.raises(EmbedderConfigError, match="mnemo-embedder.json"):
        load_embedder(f"onnx:{directory}")
    card = {"name": "my-bge", "pooling": "cls", "normalize": True, "max_tokens": 128}
    (directory / "mnemo-embedder.json").write_text(json.dumps(card))
    embedder = load_embedder(f"onnx:{directory}")
    assert embedder is not None and embedder.model.startswith("my-bge-6c9c6101a956")
    packaged = load_embedder("local")
    assert packaged is not None
    mine, theirs = (
        embedder.embed(["A kitten naps on the couch."]),
        packaged.embed(["A kitten naps on the couch."]),
    )
    assert mine == theirs  # same graph, same pooling: the same vector
    with pytest.raises(EmbedderConfigError, match="does not exist"):
        load_embedder(f"onnx:{tmp_path / 'none'}")
