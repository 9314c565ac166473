"""Judgement (docs/relevance.md, "Relevance and judgement"): with the default
embedder, RecallMemories returns and BuildContext injects only what is
relevant to the query, possibly nothing; a request's ``min_score`` and the
server's ``--min-relevance`` say otherwise. Real server, real model."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from mnemo.v1 import memories_pb2 as pb
from mnemo_server.domain.relevance import DEFAULT_MIN_RELEVANCE
from tests.api.memories import USER, Stub, create, recall, texts
from tests.support.embedding import wait_until_embedded
from tests.support.server import running_server

FACTS = (
    "Maria works as a nurse at the city hospital.",
    "Maria has a golden retriever named Biscuit.",
    "Maria's sister Ana lives in Lisbon.",
    "Maria is allergic to peanuts.",
    "Maria drives a blue Toyota Corolla.",
    "Maria is learning to play the cello.",
    "Maria's favourite food is sushi.",
    "Maria moved to Berlin in 2019.",
)
OFF_TOPIC = (
    "What is the capital of Peru?",
    "Convert 72 °F to Celsius.",
    "How do I reverse a list in Python?",
    "Who wrote Pride and Prejudice?",
)
ABOUT_HER = {
    "Which instrument is Maria learning?": "Maria is learning to play the cello.",
    "What car does Maria drive?": "Maria drives a blue Toyota Corolla.",
    "Where does Maria's sister live?": "Maria's sister Ana lives in Lisbon.",
}


def context(stub: Stub, query: str, **fields: Any) -> pb.BuildContextResponse:
    response: pb.BuildContextResponse = stub.BuildContext(
        pb.BuildContextRequest(parent=USER, query=query, **fields)
    )
    return response


def _saved(database_url: str, target: str) -> Stub:
    channel = grpc.insecure_channel(target)
    stub = Stub(channel)
    for fact in FACTS:
        create(stub, fact)
    wait_until_embedded(database_url)
    return stub


def test_nothing_is_returned_or_injected_for_what_no_memory_is_about(database_url: str) -> None:
    with running_server(database_url, embedder="local") as target:
        stub = _saved(database_url, target)
        for question in OFF_TOPIC:
            assert recall(stub, question) == [], question
            injected = context(stub, question)
            assert (injected.system_message, list(injected.memories)) == ("", []), question
            # The override returns the best matches whatever their relevance.
            everything = recall(stub, question, min_score=0.0)
            assert everything and all(h.score < DEFAULT_MIN_RELEVANCE for h in everything)
            assert context(stub, question, min_score=0.0).memories
        for question, fact in ABOUT_HER.items():
            hits = recall(stub, question)
            assert texts(hits)[:1] == [fact], question
            assert all(DEFAULT_MIN_RELEVANCE <= h.score < 1 for h in hits)
            injected = context(stub, question)
            assert injected.memories[0] == hits[0].memory.name
            assert fact in injected.system_message


def test_a_server_minimum_applies_to_requests_that_name_none(database_url: str) -> None:
    with running_server(database_url, embedder="local", min_relevance=0.0) as target:
        stub = _saved(database_url, target)
        assert recall(stub, OFF_TOPIC[0])  # the server keeps every match
        assert recall(stub, OFF_TOPIC[0], min_score=DEFAULT_MIN_RELEVANCE) == []
    with running_server(database_url, embedder="local", min_relevance=1.0) as target:
        stub = Stub(grpc.insecure_channel(target))
        question = next(iter(ABOUT_HER))
        assert recall(stub, question) == []
        assert context(stub, question).system_message == ""
        assert recall(stub, question, min_score=DEFAULT_MIN_RELEVANCE)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_minimum_that_is_not_a_number_is_refused(database_url: str, bad: float) -> None:
    with running_server(database_url) as target:
        stub = Stub(grpc.insecure_channel(target))
        for call in (
            lambda: recall(stub, "tea", min_score=bad),
            lambda: context(stub, "tea", min_score=bad),
        ):
            with pytest.raises(grpc.RpcError) as refused:
                call()
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
