"""The remote embedder (``embedders.remote``) against a real OpenAI-compatible
endpoint on 127.0.0.1 that computes real vectors with the shipped model
(``tests.support.embedding_endpoint``): the vectors, batching, the key,
retries and refusals; then a server embedding through it on every backend:
saves that never wait for it, recall while it is down, the backlog draining
when it is back, and a change of model re-embedding what the server
computed while keeping a client's vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from sqlalchemy import select

from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import memories_pb2_grpc
from mnemo_server.domain.embedding import EmbedderConfigError
from mnemo_server.embedders import RemoteOptions, load_embedder, remote
from mnemo_server.embedders.remote import EmbeddingRequestFailed, RemoteEmbedder, RemoteSettings
from mnemo_server.store.schema import memories, memory_embeddings
from tests.support.embedding import wait_until_embedded
from tests.support.embedding_endpoint import Endpoint, embedding_endpoint, shipped_model
from tests.support.rpc_errors import error_details
from tests.support.server import running_server
from tests.support.user_rows import connected

USER = "users/ada"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with embedding_endpoint(key="sk-test") as running:
        yield running


def embedder(endpoint: Endpoint, **fields: object) -> RemoteEmbedder:
    return RemoteEmbedder(RemoteSettings(model="bge", url=endpoint.url, key=endpoint.key, **fields))  # type: ignore[arg-type]


def test_vectors_are_the_models_in_the_order_of_the_texts(endpoint: Endpoint) -> None:
    remote_model = embedder(endpoint)
    texts = ["Adopted a golden retriever", "Drives a red car", "x" * 50]
    got = np.array(remote_model.embed(texts))
    want = np.array(shipped_model().embed(texts))
    assert remote_model.dimensions == want.shape[1] == 384
    assert remote_model.model == "bge"
    assert np.allclose(got, want, atol=1e-5)
    assert endpoint.requests[-1]["model"] == "bge" and endpoint.requests[-1]["input"] == texts


def test_documents_go_in_batches_and_queries_in_one_attempt(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote_model = embedder(endpoint, dimensions=8)
    assert remote_model.model == "bge-8d" and remote_model.dimensions == 8
    monkeypatch.setattr(remote, "MAX_INPUTS", 2)
    endpoint.requests.clear()
    vectors = remote_model.embed(["a", "b", "c", "d", "e"])
    assert [len(r["input"]) for r in endpoint.requests] == [2, 2, 1]
    assert all(r["dimensions"] == 8 for r in endpoint.requests)
    assert [len(v) for v in vectors] == [8] * 5
    assert all(abs(np.linalg.norm(v) - 1.0) < 1e-6 for v in vectors)  # normalised

    endpoint.requests.clear()
    endpoint.fail_next = 1
    with pytest.raises(EmbeddingRequestFailed) as failed:
        remote_model.embed_queries(["a query"])
    assert failed.value.status == 503 and len(endpoint.requests) == 1


def test_busy_answers_are_retried_and_refusals_are_not(endpoint: Endpoint) -> None:
    remote_model = embedder(endpoint, dimensions=384)
    endpoint.requests.clear()
    endpoint.fail_next = 2
    assert len(remote_model.embed(["one"])) == 1
    assert len(endpoint.requests) == 3

    endpoint.requests.clear()
    endpoint.refuse_marker = "TOO LONG"
    with pytest.raises(EmbeddingRequestFailed) as refused:
        remote_model.embed(["fine", "TOO LONG"])
    assert refused.value.status == 400 and len(endpoint.requests) == 1

    endpoint.requests.clear()
    endpoint.down = True
    with pytest.raises(EmbeddingRequestFailed):
        remote_model.embed(["one"])
    assert len(endpoint.requests) == 1 + remote.RETRIES


def test_the_key_comes_from_its_file_or_the_environment(endpoint: Endpoint, tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk-test\n")
    from_file = RemoteSettings.of("bge", url=endpoint.url, key_file=key_file, env={})
    assert from_file.key == "sk-test" and RemoteEmbedder(from_file).dimensions == 384
    from_env = RemoteSettings.of("bge", url=endpoint.url, env={"OPENAI_API_KEY": "sk-test"})
    assert from_env.key == "sk-test"
    ours = RemoteSettings.of(
        "bge", url=endpoint.url, env={"MNEMO_EMBEDDER_API_KEY": "a", "OPENAI_API_KEY": "b"}
    )
    assert ours.key == "a"
    wrong = RemoteSettings.of("bge", url=endpoint.url, env={"OPENAI_API_KEY": "sk-wrong"})
    with pytest.raises(EmbedderConfigError, match="401"):
        RemoteEmbedder(wrong)
    with pytest.raises(EmbedderConfigError, match="http"):
        RemoteSettings.of("bge", url="ftp://example.com", env={})


def test_an_endpoint_that_cannot_be_reached_stops_the_start_unless_dimensions_are_given() -> None:
    with embedding_endpoint() as gone:
        url = gone.url
    with pytest.raises(EmbedderConfigError, match="--embedder-dimensions"):
        load_embedder("openai:bge", remote=RemoteOptions(url=url, timeout_seconds=1))
    started = load_embedder("openai:bge", remote=RemoteOptions(url=url, dimensions=384))
    assert started is not None and started.dimensions == 384


def _server(database_url: str, endpoint: Endpoint, key_file: Path, **more: object) -> object:
    return running_server(
        database_url,
        embedder="openai:bge",
        embedder_url=endpoint.url,
        embedder_key_file=key_file,
        embedder_timeout_seconds=5.0,
        **more,
    )


def _recall(stub: memories_pb2_grpc.MemoryServiceStub, query: str, **fields: object) -> list[str]:
    request = pb.RecallMemoriesRequest(parent=USER, query=query, max_results=1, **fields)  # type: ignore[arg-type]
    return [hit.memory.text for hit in stub.RecallMemories(request)]


def test_a_server_embeds_through_the_endpoint_and_saves_never_wait_for_it(
    database_url: str, endpoint: Endpoint, tmp_path: Path
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(endpoint.key)
    with (
        _server(database_url, endpoint, key_file) as target,  # type: ignore[attr-defined]
        grpc.insecure_channel(target) as channel,
    ):
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        for text in ("Adopted a golden retriever last spring", "Drives a red car"):
            stub.CreateMemory(pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text=text)))
        wait_until_embedded(database_url)
        assert _recall(stub, "does she have a puppy?") == ["Adopted a golden retriever last spring"]

        endpoint.down = True
        stub.CreateMemory(
            pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text="Her cat is called Miso"))
        )
        # Lexical recall finds it at once; a recall that leaves semantic unset
        # falls back to lexical while the provider is down; semantic=true says so.
        assert _recall(stub, "Miso", semantic=False) == ["Her cat is called Miso"]
        assert _recall(stub, "the cat Miso") == ["Her cat is called Miso"]
        with pytest.raises(grpc.RpcError) as failed:
            _recall(stub, "a kitten", semantic=True)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        assert error_details(failed.value).reason == "EMBEDDER_FAILED"

        endpoint.down = False
        wait_until_embedded(database_url)  # the backlog drains once it is back
        assert _recall(stub, "a kitten", semantic=True) == ["Her cat is called Miso"]


def test_a_new_model_re_embeds_what_the_server_computed_and_keeps_client_vectors(
    database_url: str, endpoint: Endpoint, tmp_path: Path
) -> None:
    client = pb.Embedding(model="client-model", values=[1.0, 0.0, 0.0])
    with (
        running_server(database_url, embedder="hashing:16") as target,
        grpc.insecure_channel(target) as channel,
    ):
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        stub.CreateMemory(
            pb.CreateMemoryRequest(
                parent=USER, memory=pb.Memory(text="Adopted a golden retriever last spring")
            )
        )
        stub.CreateMemory(
            pb.CreateMemoryRequest(
                parent=USER, memory=pb.Memory(text="Drives a red car", embedding=client)
            )
        )
        wait_until_embedded(database_url)
    key_file = tmp_path / "key"
    key_file.write_text(endpoint.key)
    with (
        _server(database_url, endpoint, key_file) as target,  # type: ignore[attr-defined]
        grpc.insecure_channel(target) as channel,
    ):
        wait_until_embedded(database_url, model="bge")
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        assert _recall(stub, "does she have a puppy?", semantic=True) == [
            "Adopted a golden retriever last spring"
        ]
    with connected(database_url) as conn:
        stored = conn.execute(
            # Joined on the foreign key (user_id, memory_pk): a sharded store needs both.
            select(memories.c.text, memory_embeddings.c.model, memory_embeddings.c.computed).join(
                memory_embeddings
            )
        ).all()
    assert {text: model for text, model, _ in stored} == {
        "Adopted a golden retriever last spring": "bge",
        "Drives a red car": "client-model",
    }
    assert {text: computed for text, _, computed in stored} == {
        "Adopted a golden retriever last spring": True,
        "Drives a red car": False,
    }
