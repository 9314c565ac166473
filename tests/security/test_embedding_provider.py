"""The embedding provider is outside the trust boundary (docs/operations.md,
"Threat model"): probes of a live server that embeds through an
OpenAI-compatible endpoint on 127.0.0.1 (``tests.support.embedding_endpoint``,
real HTTP, real vectors), told to misbehave as a hostile or broken provider
would.

- Consent before meaning: no text of a user whose consent is withdrawn,
  whose memory switch is off, or from a temporary conversation reaches the
  provider, on any path that embeds (recall, context, the near-duplicate
  check, the background embedder, the backfill of a new model).
- No secret out: an error body that echoes the API key reaches neither a
  caller nor a log line, and no caller learns the provider's address.
- No bad vector in: vectors of the wrong length, with NaN, infinity, values
  beyond float32, or all zeros are never stored or used; a bad vector
  already stored never turns a read into ``INTERNAL``.
- Bounded: a provider that trickles its answer or sends a huge one holds no
  recall past its deadline, no thread past it, and no memory beyond the cap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import func, select, update

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, governance_pb2_grpc, memories_pb2_grpc
from mnemo.v1 import memories_pb2 as pb
from mnemo_server.domain.vectors import encode_vector
from mnemo_server.store.schema import memories, memory_embeddings, memory_user_state
from tests.api.governance import GRANTED, WITHDRAWN, set_consent, switch
from tests.support.databases import SqliteDatabases
from tests.support.embedding import wait_until_embedded
from tests.support.embedding_endpoint import Endpoint, Misbehaviour, embedding_endpoint
from tests.support.leaky_embedder import LEAKED
from tests.support.metrics import scrape, value
from tests.support.rpc_errors import error_details
from tests.support.server import ServerThread, running_server, server_settings
from tests.support.subprocess_server import subprocess_server
from tests.support.user_rows import connected

pytestmark = pytest.mark.timeout(180)

KEY = "sk-live-Q9xT2mWv8rLpZk4NbYc7HdJf"
MODEL = "bge"
DIMENSIONS = 384
STORED_MODEL = f"{MODEL}-{DIMENSIONS}d"
"""The name the server keeps its vectors under (``--embedder-dimensions`` given)."""
MARKER = "lupus"
TRAIN = "Takes the 7:40 train to work"
CALL_TIMEOUT_S = 30.0
"""Every call's deadline: a call that hangs fails the test instead of it."""


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with embedding_endpoint(key=KEY) as running:
        yield running


def _serving(database_url: str, endpoint: Endpoint, tmp_path: Path, **more: Any) -> Any:
    key_file = tmp_path / "embedder-key"
    key_file.write_text(KEY)
    more.setdefault("embedder_timeout_seconds", 2.0)
    return running_server(
        database_url,
        embedder=f"openai:{MODEL}",
        embedder_url=endpoint.url,
        embedder_key_file=key_file,
        embedder_dimensions=DIMENSIONS,
        **more,
    )


class Stubs:
    def __init__(self, channel: grpc.Channel) -> None:
        self.memories = memories_pb2_grpc.MemoryServiceStub(channel)
        self.governance = governance_pb2_grpc.GovernanceServiceStub(channel)
        self.conversations = conversations_pb2_grpc.ConversationServiceStub(channel)

    def save(self, user: str, text: str, **fields: Any) -> pb.CreateMemoryResponse:
        request = pb.CreateMemoryRequest(parent=user, memory=pb.Memory(text=text), **fields)
        response: pb.CreateMemoryResponse = self.memories.CreateMemory(
            request, timeout=CALL_TIMEOUT_S
        )
        return response

    def recall(self, user: str, query: str, **fields: Any) -> list[pb.RecallMemoriesResponse]:
        request = pb.RecallMemoriesRequest(parent=user, query=query, max_results=5, **fields)
        return list(self.memories.RecallMemories(request, timeout=CALL_TIMEOUT_S))

    def context(self, user: str, query: str, **fields: Any) -> pb.BuildContextResponse:
        request = pb.BuildContextRequest(parent=user, query=query, max_entries=5, **fields)
        response: pb.BuildContextResponse = self.memories.BuildContext(
            request, timeout=CALL_TIMEOUT_S
        )
        return response


@contextmanager
def _one_fact_then(
    database_url: str, endpoint: Endpoint, tmp_path: Path, misbehaviour: str
) -> Iterator[Stubs]:
    """A server whose user ada has one fact embedded ("Takes the 7:40 train
    to work"), and a provider that misbehaves from then on."""
    with _serving(database_url, endpoint, tmp_path) as target, grpc.insecure_channel(target) as ch:
        stubs = Stubs(ch)
        stubs.save("users/ada", TRAIN)
        wait_until_embedded(database_url)
        endpoint.misbehave = misbehaviour
        yield stubs


@pytest.fixture
def sqlite_url(sqlite_databases: SqliteDatabases, tmp_path: Path) -> str:
    """A migrated SQLite file: the tests of the provider's answers need no
    second backend (what they check happens before any store)."""
    return sqlite_databases.fresh(tmp_path)


def _refused(call: Any) -> str:
    with pytest.raises(grpc.RpcError) as failed:
        call()
    assert failed.value.code() == grpc.StatusCode.FAILED_PRECONDITION, failed.value
    return error_details(failed.value).reason


# ------------------------------------------------------------ consent first


def test_no_text_of_a_closed_gate_reaches_the_provider(
    database_url: str, endpoint: Endpoint, tmp_path: Path
) -> None:
    with _serving(database_url, endpoint, tmp_path) as target, grpc.insecure_channel(target) as ch:
        stubs = Stubs(ch)
        for user in ("users/ada", "users/bob", "users/carol"):
            stubs.save(user, TRAIN)
        wait_until_embedded(database_url)

        set_consent(stubs.governance, "users/ada", WITHDRAWN)
        switch(stubs.governance, "users/bob", False)
        stubs.conversations.CreateConversation(
            cv.CreateConversationRequest(
                parent="users/carol",
                conversation_id="off-record",
                conversation=cv.Conversation(temporary=True),
            )
        )
        endpoint.requests.clear()
        for user, reason in (
            ("users/ada", "MEMORY_CONSENT_WITHDRAWN"),
            ("users/bob", "MEMORY_DISABLED"),
        ):
            assert stubs.recall(user, "is my lupus flaring up?") == []
            assert stubs.recall(user, "is my lupus flaring up?", semantic=True) == []
            assert stubs.context(user, "lupus treatment options").memories == []
            assert (
                _refused(
                    lambda u=user: stubs.save(u, "my diagnosis is lupus", near_duplicates=True)
                )
                == reason
            )
        temporary = "users/carol/conversations/off-record"
        assert (
            stubs.context("users/carol", "lupus treatment", conversation=temporary).memories == []
        )
        assert (
            _refused(
                lambda: stubs.save(
                    "users/carol",
                    "my diagnosis is lupus",
                    near_duplicates=True,
                    origin_conversation=temporary,
                )
            )
            == "TEMPORARY_CONVERSATION"
        )
        assert not endpoint.saw(MARKER), endpoint.texts()

        # The gates were the reason: an open one sends the query.
        stubs.recall("users/carol", "is my lupus flaring up?", semantic=True)
        assert endpoint.saw(MARKER)


def test_the_background_embedder_and_the_backfill_skip_closed_gates(
    database_url: str, endpoint: Endpoint, tmp_path: Path
) -> None:
    # Saved by a server without an embedder: a server that starts with one
    # backfills them (queues every entry without a vector of its model).
    with (
        running_server(database_url, embedder="none") as target,
        grpc.insecure_channel(target) as ch,
    ):
        stubs = Stubs(ch)
        stubs.save("users/ada", "ada: my diagnosis is lupus")
        stubs.save("users/bob", "bob: my lupus medication is hydroxychloroquine")
        stubs.save("users/eve", "eve: takes the 7:40 train")
        set_consent(stubs.governance, "users/ada", WITHDRAWN)
        switch(stubs.governance, "users/bob", False)
    with _serving(database_url, endpoint, tmp_path) as target, grpc.insecure_channel(target) as ch:
        stubs = Stubs(ch)
        _wait_for_vector(database_url, "eve: takes the 7:40 train")
        refused = _refused(lambda: stubs.save("users/ada", "ada: lupus flares in winter"))
        assert refused == "MEMORY_CONSENT_WITHDRAWN"
        stubs.save("users/eve", "eve: walks the dog at six")
        _wait_for_vector(database_url, "eve: walks the dog at six")
        wait_until_embedded(database_url)  # held entries do not count as waiting
        assert not endpoint.saw(MARKER), endpoint.texts()
        assert _vector_count(database_url, "ada: my diagnosis is lupus") == 0

        # Consent granted again: the held entry is embedded after all.
        set_consent(stubs.governance, "users/ada", GRANTED)
        _wait_for_vector(database_url, "ada: my diagnosis is lupus")
        assert endpoint.saw("ada: my diagnosis")
        assert not endpoint.saw("bob:"), endpoint.texts()


def _vector_count(database_url: str, text: str, model: str = STORED_MODEL) -> int:
    with connected(database_url) as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(memories.join(memory_embeddings))
                .where(memories.c.text == text, memory_embeddings.c.model == model)
            ).scalar_one()
        )


def _wait_for_vector(database_url: str, text: str, model: str = STORED_MODEL) -> None:
    deadline = time.monotonic() + 60
    while _vector_count(database_url, text, model) == 0:
        assert time.monotonic() < deadline, f"{text!r} never got a vector of {model}"
        time.sleep(0.05)


# ------------------------------------------------------------ no secret out


@pytest.mark.sqlite
def test_a_provider_that_echoes_the_key_reaches_no_caller_and_no_log(
    sqlite_url: str, endpoint: Endpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint.misbehave = Misbehaviour.ECHO_KEY
    port = str(endpoint.url.split(":")[2].split("/")[0])
    with (
        caplog.at_level(logging.DEBUG),
        _serving(sqlite_url, endpoint, tmp_path) as target,
        grpc.insecure_channel(target) as ch,
    ):
        stubs = Stubs(ch)
        stubs.save("users/ada", TRAIN)
        calls = (
            lambda: stubs.recall("users/ada", "when is the train?", semantic=True),
            lambda: stubs.save("users/ada", "Takes the train at 7:40", near_duplicates=True),
            lambda: stubs.context("users/ada", "the train", semantic=True),
        )
        for call in calls:
            with pytest.raises(grpc.RpcError) as failed:
                call()
            details = error_details(failed.value)
            assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
            assert details.reason == "EMBEDDER_FAILED"
            said = f"{details.message} {details.metadata}"
            for secret in (KEY, "Bearer", "Incorrect API key", "127.0.0.1", port, "platform."):
                assert secret not in said, said
        # With semantic unset the same failure falls back to lexical recall.
        assert [h.memory.text for h in stubs.recall("users/ada", "train")] == [TRAIN]
        time.sleep(0.5)  # the background embedder's failures are logged too
    assert endpoint.requests, "the provider was asked"
    logged = "\n".join(
        f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records if r.exc_info is None
    )
    logged += "\n".join(
        logging.Formatter().formatException(r.exc_info) for r in caplog.records if r.exc_info
    )
    assert "provider" in logged or "embed" in logged, logged  # the failures were logged
    assert KEY not in logged, logged
    assert "Bearer " not in logged, logged


@pytest.mark.sqlite
def test_no_log_line_of_the_server_prints_a_credential(sqlite_url: str, tmp_path: Path) -> None:
    """Defence in depth: an embedder of the operator's own whose exceptions
    print a key (``leaky_embedder``) is redacted on the server's real
    stderr, whichever line logs it."""
    root = str(Path(__file__).resolve().parents[2])
    with (
        subprocess_server(
            sqlite_url,
            "--embedder",
            "tests.support.leaky_embedder:LeakyEmbedder",
            "--log-level",
            "DEBUG",
            env={"PYTHONPATH": root},
            log_dir=tmp_path,
        ) as server,
        grpc.insecure_channel(server.target) as ch,
    ):
        stubs = Stubs(ch)
        stubs.save("users/ada", TRAIN)
        with pytest.raises(grpc.RpcError) as failed:
            stubs.recall("users/ada", "the train", semantic=True)
        assert LEAKED not in str(error_details(failed.value))
        assert stubs.recall("users/ada", "train")  # unset: lexical
        deadline = time.monotonic() + 20
        while "embedding 1 texts failed" not in server.log_text():
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.05)
        logged = server.log_text()
    assert "upstream refused" in logged  # the failures were logged...
    assert LEAKED not in logged and "Bearer " not in logged, logged  # ...without the key


# ------------------------------------------------------------ no bad vector in


@pytest.mark.sqlite
@pytest.mark.parametrize(
    "misbehaviour",
    [
        Misbehaviour.WRONG_LENGTH,
        Misbehaviour.NAN,
        Misbehaviour.INFINITY,
        Misbehaviour.BEYOND_FLOAT32,
        Misbehaviour.ZEROS,
    ],
)
def test_bad_vectors_from_the_provider_are_never_stored_or_used(
    sqlite_url: str, endpoint: Endpoint, tmp_path: Path, misbehaviour: str
) -> None:
    with _one_fact_then(sqlite_url, endpoint, tmp_path, misbehaviour) as stubs:
        with pytest.raises(grpc.RpcError) as failed:
            stubs.save("users/ada", "Adopted a golden retriever", near_duplicates=True)
        assert error_details(failed.value).reason == "EMBEDDER_FAILED"
        stubs.save("users/ada", "Drives a red car")  # the background embedder gets bad vectors
        # A query vector that is not one of the model's: lexical recall, no
        # INVALID_ARGUMENT blaming a client that sent no vector.
        assert [h.memory.text for h in stubs.recall("users/ada", "train")] == [TRAIN]
        assert stubs.context("users/ada", "the train").memories
        with pytest.raises(grpc.RpcError) as failed:
            stubs.recall("users/ada", "a puppy", semantic=True)
        assert error_details(failed.value).reason == "EMBEDDER_FAILED"
        time.sleep(0.5)
        endpoint.misbehave = ""
        hits = stubs.recall("users/ada", "does she commute by rail?", semantic=True)
        assert hits and hits[0].memory.text == TRAIN
    with connected(sqlite_url) as conn:
        stored = conn.execute(
            select(memory_embeddings.c.vector, memory_embeddings.c.dimensions)
        ).all()
    assert stored and all(row.dimensions == DIMENSIONS for row in stored)
    assert all(len(row.vector) == 4 * DIMENSIONS for row in stored)


def test_a_bad_stored_vector_is_skipped_not_an_internal_error(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    thread = ServerThread(
        server_settings(database_url, embedder="hashing:16", metrics_listen="127.0.0.1:0")
    )
    target = thread.start()
    try:
        with grpc.insecure_channel(target) as ch:
            stubs = Stubs(ch)
            for text in (TRAIN, "Drives a red car", "Adopted a puppy"):
                stubs.save("users/ada", text)
            wait_until_embedded(database_url)
            _spoil_vectors(database_url, "users/ada")
            with caplog.at_level(logging.WARNING):
                for _ in range(3):
                    hits = stubs.recall("users/ada", "the train to work", semantic=True)
                    assert [h.memory.text for h in hits] == [TRAIN]
                    context = stubs.context("users/ada", "train to work", semantic=True)
                    assert context.memories == [hits[0].memory.name]
                assert [h.memory.text for h in stubs.recall("users/ada", "red car")] == [
                    "Drives a red car"
                ]
            assert thread.server.metrics_port is not None
            samples = scrape(thread.server.metrics_port)
    finally:
        thread.stop()
    assert value(samples, "mnemo_invalid_vectors_skipped_total") == 2
    said = [r.getMessage() for r in caplog.records if "recall skips" in r.getMessage()]
    assert len(said) == 1, said  # logged once, not per read


def _spoil_vectors(database_url: str, user: str) -> None:
    """Store, as a broken provider or an old release might have, a vector
    of the wrong length for one entry and one with NaN for another."""
    user_id = user.split("/")[1]
    with connected(database_url) as conn:
        rows = conn.execute(
            select(memories.c.id, memories.c.text, memory_embeddings.c.dimensions)
            .select_from(memories.join(memory_embeddings))
            .where(memories.c.user_id == user_id)
        ).all()
        by_text = {row.text: row for row in rows}
        car, puppy = by_text["Drives a red car"], by_text["Adopted a puppy"]
        e = memory_embeddings.c
        conn.execute(
            update(memory_embeddings)
            .where(e.user_id == user_id, e.memory_pk == car.id)
            .values(vector=encode_vector([0.5] * (car.dimensions - 3)))
        )
        conn.execute(
            update(memory_embeddings)
            .where(e.user_id == user_id, e.memory_pk == puppy.id)
            .values(vector=encode_vector([float("nan")] * puppy.dimensions))
        )
        conn.execute(
            update(memory_user_state)
            .where(memory_user_state.c.user_id == user_id)
            .values(vectors_version=memory_user_state.c.vectors_version + 1)
        )
        conn.commit()


# ------------------------------------------------------------ bounded


@pytest.mark.sqlite
def test_a_trickling_provider_holds_no_recall_and_no_worker(
    sqlite_url: str, endpoint: Endpoint, tmp_path: Path
) -> None:
    with _one_fact_then(sqlite_url, endpoint, tmp_path, Misbehaviour.TRICKLE) as stubs:
        # More trickled calls at once than any pool of threads has, each
        # with a query the cache has not seen.
        with ThreadPoolExecutor(12) as pool:
            answers = list(
                pool.map(lambda i: stubs.recall("users/ada", f"train number {i}"), range(12))
            )
        assert all(a and a[0].memory.text == TRAIN for a in answers)
        stubs.save("users/ada", "Drives a red car")  # the worker meets the trickle too
        time.sleep(3.0)
        endpoint.misbehave = ""
        # Neither recall nor the background embedder is stuck.
        hits = stubs.recall("users/ada", "does she commute by rail?", semantic=True)
        assert hits and hits[0].memory.text == TRAIN
        _wait_for_vector(sqlite_url, "Drives a red car")


@pytest.mark.sqlite
@pytest.mark.parametrize("misbehaviour", [Misbehaviour.FLOOD, Misbehaviour.FLOOD_DECLARED])
def test_a_huge_answer_is_not_read_past_the_cap(
    sqlite_url: str, endpoint: Endpoint, tmp_path: Path, misbehaviour: str
) -> None:
    with _one_fact_then(sqlite_url, endpoint, tmp_path, misbehaviour) as stubs:
        endpoint.flood_bytes = 300 * 1024 * 1024
        hits = stubs.recall("users/ada", "the train to work")
        assert hits and hits[0].memory.text == TRAIN
        # The cap of one query's answer is well under a megabyte; what the
        # endpoint could write past it sits in the sockets' buffers.
        assert endpoint.written < 32 * 1024 * 1024, endpoint.written
