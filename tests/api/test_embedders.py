"""Server-side embedders through a real server started with ``embedder=...``:
entries saved without a vector get one, and semantic recall needs no query
vector."""

from __future__ import annotations

import grpc
import pytest

from mnemo.v1 import memories_pb2 as pb
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

            plain = recall(stub, "dog")
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


def test_the_static_model_recalls_by_meaning(database_url: str) -> None:
    pytest.importorskip("static_model")
    with running_server(database_url, embedder="static-model") as target:
        with grpc.insecure_channel(target) as channel:
            stub = Stub(channel)
            for text in (
                "The user likes green tea",
                "The user lives in Lisbon",
                "The user has a dog",
                "Drives a red car",
                "Works as a nurse",
            ):
                create(stub, text)

            assert recall(stub, "puppy") == []  # no shared word
            hits = recall(stub, "puppy", semantic=True)
            assert texts(hits)[0] == "The user has a dog"
            assert list(hits[0].signals) == [SEMANTIC]
