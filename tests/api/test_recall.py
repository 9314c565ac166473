"""RecallMemories and BuildContext through a real server: rank order, scores
and signals, conversation scope, tie-breaks, min_score, semantic fusion with
client vectors, and the inject budget."""

from __future__ import annotations

import math
from typing import Any

import grpc
import pytest

from mnemo.v1 import memories_pb2 as pb
from mnemo_server.domain.relevance import LEXICAL as LEXICAL_RECALL
from tests.api.memories import C1, C2, USER, Stub, create, recall, texts, vector
from tests.support.rpc_errors import rpc_failure

LEXICAL, SEMANTIC = pb.RECALL_SIGNAL_LEXICAL, pb.RECALL_SIGNAL_SEMANTIC
SCOPED, PINNED = pb.RECALL_SIGNAL_CONVERSATION_SCOPE, pb.RECALL_SIGNAL_PINNED


def relevance(share: float, entries: int) -> float:
    """What a lexical hit of ``share`` scores in a store of ``entries``."""
    return LEXICAL_RECALL.relevance(share, None, entries)


def _scoped(stub: Stub, text: str, conversation: str) -> pb.Memory:
    return create(stub, text, scope=pb.MEMORY_SCOPE_CONVERSATION, conversation=conversation)


def test_hits_stream_in_rank_order_with_score_rank_and_signals(memories: Stub) -> None:
    create(memories, "The user likes green tea", pinned=True)
    create(memories, "The user drinks green smoothies")
    create(memories, "Tea time is at five")
    create(memories, "The user likes hiking")

    hits = recall(memories, "Green tea?")
    assert texts(hits) == [
        "The user likes green tea",
        "Tea time is at five",  # equal match: the newer first
        "The user drinks green smoothies",
    ]
    assert [h.rank for h in hits] == [1, 2, 3]
    # Scores are the lexical share's calibrated relevance (domain.relevance).
    assert [h.score for h in hits] == pytest.approx([relevance(1.0, 4), *[relevance(0.5, 4)] * 2])
    assert [list(h.signals) for h in hits] == [[LEXICAL, PINNED], [LEXICAL], [LEXICAL]]
    assert all(h.memory.name.startswith(f"{USER}/memories/") for h in hits)
    assert texts(recall(memories, "green tea", max_results=2)) == texts(hits)[:2]
    assert recall(memories, "green tea", parent="users/u2") == []
    assert recall(memories, "volcano") == []


def test_the_current_conversation_outranks_identity_on_an_equal_match(memories: Stub) -> None:
    aisle = _scoped(memories, "Prefers aisle seats on this trip", C1)
    _scoped(memories, "Prefers middle seats", C2)
    window = create(memories, "Prefers window seats")  # newer: recency alone would put it first

    hits = recall(memories, "seats", conversation=C1)
    assert [h.memory for h in hits] == [aisle, window]
    assert [list(h.signals) for h in hits] == [[LEXICAL, SCOPED], [LEXICAL]]
    assert hits[0].score == hits[1].score
    assert [h.memory for h in recall(memories, "seats")] == [window]  # no conversation
    identity_only = recall(memories, "seats", conversation=C1, scope=pb.RECALL_SCOPE_IDENTITY)
    assert [h.memory for h in identity_only] == [window]
    scoped_only = recall(memories, "seats", conversation=C1, scope=pb.RECALL_SCOPE_CONVERSATION)
    assert [h.memory for h in scoped_only] == [aisle]
    # Relevance first: a better identity match still wins.
    assert [h.memory for h in recall(memories, "window seats", conversation=C1)] == [window, aisle]


def test_pinned_then_recency_break_ties_and_min_score_drops_weak_hits(memories: Stub) -> None:
    create(memories, "Dog is called Rex", pinned=True)
    create(memories, "Walks the dog at seven")
    create(memories, "Feeds the dog at eight")

    assert texts(recall(memories, "dog")) == [
        "Dog is called Rex",
        "Feeds the dog at eight",
        "Walks the dog at seven",
    ]
    hits = recall(memories, "dog walks")
    assert texts(hits) == ["Walks the dog at seven", "Dog is called Rex", "Feeds the dog at eight"]
    # Scores are the calibrated relevance of the share of the query's idf
    # weight matched: "dog" is in all three entries (it weighs little),
    # "walks" in one.
    dog, walks = (math.log(1 + (3 - df + 0.5) / (df + 0.5)) for df in (3, 1))
    share = dog / (dog + walks)
    assert [h.score for h in hits] == pytest.approx([relevance(s, 3) for s in (1.0, share, share)])
    assert texts(recall(memories, "dog walks", min_score=0.75)) == ["Walks the dog at seven"]
    assert len(recall(memories, "dog walks", min_score=hits[1].score)) == 3  # inclusive floor
    assert recall(memories, "dog walks", min_score=1.5) == []


def test_semantic_fusion_reorders_where_the_vectors_say_so(memories: Stub) -> None:
    budget = create(memories, "Trip budget is tight", embedding=vector(1, 0, 0, 0))
    kyoto = create(memories, "Plans a trip to Kyoto in spring", embedding=vector(0, 0, 1, 0))
    create(memories, "Saving up for flights", embedding=vector(0.9, 0.2, 0, 0))
    query = vector(1, 0.1, 0, 0)

    # Unset semantic on a server without an embedder: lexical. Both hold "trip"
    # and nothing else of the query: an equal match, the newer first.
    lexical = recall(memories, "trip", query_embedding=query)
    assert [h.memory for h in lexical] == [kyoto, budget]
    assert lexical[0].score == lexical[1].score == pytest.approx(relevance(1.0, 3))
    # Fused: the equal shares are told apart by the cosines; a semantic hit follows.
    fused = recall(memories, "trip", semantic=True, query_embedding=query)
    assert texts(fused) == [
        "Trip budget is tight",
        "Plans a trip to Kyoto in spring",
        "Saving up for flights",  # a semantic hit only
    ]
    assert [list(h.signals) for h in fused] == [[LEXICAL, SEMANTIC], [LEXICAL], [SEMANTIC]]
    cosine = 1 / math.hypot(1, 0.1)
    assert [h.score for h in fused] == pytest.approx(
        [0.5 + 0.5 * cosine, 0.5, 0.5 * cosine * (0.9 + 0.02) / math.hypot(0.9, 0.2)]
    )
    lexical = recall(memories, "Kyoto trip", semantic=False, query_embedding=query)

    vector_only = recall(memories, "", query_embedding=query)
    assert texts(vector_only) == ["Trip budget is tight", "Saving up for flights"]
    other_model = recall(
        memories, "Kyoto trip", semantic=True, query_embedding=vector(1, 0, 0, 0, model="other")
    )
    assert texts(other_model) == texts(lexical)

    unavailable = rpc_failure(lambda: recall(memories, "Kyoto trip", semantic=True))
    assert (unavailable.code, unavailable.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "EMBEDDER_UNAVAILABLE",
    )
    mismatch = rpc_failure(
        lambda: recall(memories, "Kyoto trip", semantic=True, query_embedding=vector(1, 0, 0))
    )
    assert (mismatch.code, mismatch.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "EMBEDDING_DIMENSION_MISMATCH",
    )
    assert mismatch.fields == ("query_embedding.values",)


def _context(stub: Stub, query: str, **fields: Any) -> pb.BuildContextResponse:
    response: pb.BuildContextResponse = stub.BuildContext(
        pb.BuildContextRequest(parent=USER, query=query, **fields)
    )
    return response


def test_build_context_never_exceeds_its_budget_and_is_deterministic(memories: Stub) -> None:
    facts = [
        "Coffee: black",
        "Drinks coffee every morning before work",
        "Coffee makes the user\n  jittery after 4pm",  # rendered as one line
        "Prefers coffee from the café around the corner, the one with the blue door",
        "Owns an espresso machine and grinds coffee beans daily at home",
        "Coffee allergy: none",
        "Does not like decaf coffee",
    ]
    names = {create(memories, text).name: text for text in facts}
    rendered = {name: " ".join(text.split()) for name, text in names.items()}

    for budget in (1, 12, 13, 30, 60, 100, 200, 16384):
        built = _context(memories, "coffee", max_bytes=budget, max_entries=50)
        used = list(built.memories)
        assert built.used_bytes <= budget
        assert built.used_bytes == sum(len(rendered[n].encode()) for n in used)
        lines = built.system_message.split("\n")
        if used:
            assert lines[1:] == [f"- {rendered[n]}" for n in used]
        else:
            assert (built.system_message, built.used_bytes) == ("", 0)
        assert _context(memories, "coffee", max_bytes=budget, max_entries=50) == built

    tiny = _context(memories, "coffee", max_bytes=13)
    assert [names[n] for n in tiny.memories] == ["Coffee: black"]  # 13 bytes exactly
    assert tiny.used_bytes == 13
    default = _context(memories, "coffee")
    assert len(default.memories) == 5 and default.used_bytes <= 1536
    assert list(default.memories) == [h.memory.name for h in recall(memories, "coffee")][:5]
    two = _context(memories, "coffee", max_entries=2)
    assert list(two.memories) == list(default.memories)[:2]
    assert _context(memories, "tea") == pb.BuildContextResponse()

    unavailable = rpc_failure(
        memories.BuildContext, pb.BuildContextRequest(parent=USER, query="coffee", semantic=True)
    )
    assert unavailable.reason == "EMBEDDER_UNAVAILABLE"
