"""Validity and sameness (issue 26), on both stores.

Supersession follows event time: a late save of an older fact becomes a
historical version (``SAVE_OUTCOME_HISTORICAL``) and the newer current entry
stays; each keyed entry is valid from its event time until the event time of
the entry that superseded it (``valid_until``). Reads at a time (``as_of``)
see what was true then; a deleted entry is in no view. Saving the same fact
as a live entry stores nothing (``SAVE_OUTCOME_DUPLICATE``), on every path,
concurrent saves included.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from mnemo.v1 import memories_pb2 as pb
from tests.api.memories import C1, USER, Stub, listed, recall, texts, vector, versions
from tests.support.server import running_server

JAN = datetime(2026, 1, 1, tzinfo=UTC)
MAR = datetime(2026, 3, 1, tzinfo=UTC)
JUN = datetime(2026, 6, 1, tzinfo=UTC)


def _stamp(value: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(value)
    return stamp


def _save(
    stub: Stub, text: str, *, at: datetime | None = None, **fields: object
) -> pb.CreateMemoryResponse:
    memory = pb.Memory(text=text, **fields)  # type: ignore[arg-type]
    if at is not None:
        memory.event_time.CopyFrom(_stamp(at))
    response: pb.CreateMemoryResponse = stub.CreateMemory(
        pb.CreateMemoryRequest(parent=USER, memory=memory)
    )
    return response


def _when(stamp: Timestamp) -> datetime:
    return stamp.ToDatetime(UTC)


def test_a_keyed_chain_saved_out_of_order_keeps_the_newest_fact_current(memories: Stub) -> None:
    june = _save(memories, "Lives in Paris", at=JUN, key="home")
    assert june.outcome == pb.SAVE_OUTCOME_CREATED
    january = _save(memories, "Lives in Berlin", at=JAN, key="home")
    assert january.outcome == pb.SAVE_OUTCOME_HISTORICAL
    assert not january.archived
    assert january.memory.HasField("archive_time")
    assert _when(january.memory.valid_until) == JUN
    march = _save(memories, "Lives in Lyon", at=MAR, key="home")
    assert march.outcome == pb.SAVE_OUTCOME_HISTORICAL
    assert _when(march.memory.valid_until) == JUN

    assert [m.text for m in listed(memories, key="home")] == ["Lives in Paris"]
    trail = {m.text: m for m in versions(memories, june.memory.name)}
    assert set(trail) == {"Lives in Paris", "Lives in Berlin", "Lives in Lyon"}
    assert _when(trail["Lives in Berlin"].valid_until) == MAR  # Lyon's save ended it
    assert not trail["Lives in Paris"].HasField("valid_until")
    assert _when(trail["Lives in Lyon"].event_time) == MAR

    def as_of(day: datetime) -> list[str]:
        return [m.text for m in listed(memories, key="home", as_of=_stamp(day))]

    assert as_of(JAN - timedelta(days=1)) == []
    assert as_of(JAN + timedelta(days=10)) == ["Lives in Berlin"]
    assert as_of(MAR) == ["Lives in Lyon"]
    assert as_of(JUN + timedelta(days=1)) == ["Lives in Paris"]


def test_a_late_save_sent_twice_is_stored_once(memories: Stub) -> None:
    _save(memories, "Lives in Paris", at=JUN, key="home")
    first = _save(memories, "Lives in Berlin", at=JAN, key="home")
    again = _save(memories, "Lives in Berlin", at=JAN + timedelta(hours=1), key="home")
    assert again.outcome == pb.SAVE_OUTCOME_DUPLICATE
    assert again.memory.name == first.memory.name
    assert len(versions(memories, first.memory.name)) == 2


def test_an_in_order_save_supersedes_and_sets_the_validity(memories: Stub) -> None:
    first = _save(memories, "Works at Acme", at=JAN, key="job")
    second = _save(memories, "Works at Initech", at=MAR, key="job")
    assert second.outcome == pb.SAVE_OUTCOME_CREATED
    assert list(second.archived) == [first.memory.name]
    old = memories.GetMemory(pb.GetMemoryRequest(name=first.memory.name)).memory
    assert _when(old.valid_until) == MAR and old.HasField("archive_time")


def test_a_batch_out_of_order_is_placed_by_event_time(memories: Stub) -> None:
    batch = memories.BatchCreateMemories(
        pb.BatchCreateMemoriesRequest(
            parent=USER,
            requests=[
                pb.CreateMemoryRequest(
                    memory=pb.Memory(text=text, key="city", event_time=_stamp(day))
                )
                for text, day in (("Paris", JUN), ("Berlin", JAN), ("Lyon", MAR))
            ],
        )
    )
    assert list(batch.outcomes) == [
        pb.SAVE_OUTCOME_CREATED,
        pb.SAVE_OUTCOME_HISTORICAL,
        pb.SAVE_OUTCOME_HISTORICAL,
    ]
    assert [m.text for m in listed(memories, key="city")] == ["Paris"]
    valid = {m.text: _when(m.valid_until) for m in batch.memories if m.HasField("valid_until")}
    assert valid == {"Berlin": MAR, "Lyon": JUN}  # as the batch left them
    trail = {m.text: m for m in versions(memories, batch.memories[0].name)}
    assert _when(trail["Berlin"].valid_until) == MAR


def test_recall_and_context_as_of_a_time_see_what_was_true_then(memories: Stub) -> None:
    _save(memories, "Ada lives in Berlin", at=JAN, key="home")
    _save(memories, "Ada lives in Paris", at=JUN, key="home")
    _save(memories, "Ada adopted a cat named Tom", at=MAR)

    now = texts(recall(memories, "where does Ada live"))
    assert now[0] == "Ada lives in Paris" and "Ada lives in Berlin" not in now
    then = recall(memories, "where does Ada live", as_of=_stamp(MAR))
    assert texts(then) == ["Ada lives in Berlin", "Ada adopted a cat named Tom"]
    assert _when(then[0].memory.valid_until) == JUN
    assert texts(recall(memories, "cat", as_of=_stamp(JAN + timedelta(days=1)))) == []
    assert texts(recall(memories, "cat", as_of=_stamp(MAR))) == ["Ada adopted a cat named Tom"]
    ranged = recall(memories, "Ada", event_time_after=_stamp(MAR), event_time_before=_stamp(JUN))
    assert texts(ranged) == ["Ada adopted a cat named Tom"]

    context = memories.BuildContext(
        pb.BuildContextRequest(parent=USER, query="where does Ada live", as_of=_stamp(MAR))
    )
    assert "Berlin" in context.system_message and "Paris" not in context.system_message


def test_a_deleted_entry_is_in_no_past_view(memories: Stub) -> None:
    berlin = _save(memories, "Ada lives in Berlin", at=JAN, key="home")
    paris = _save(memories, "Ada lives in Paris", at=MAR, key="home")
    memories.DeleteMemory(pb.DeleteMemoryRequest(name=berlin.memory.name))
    assert texts(recall(memories, "Ada lives", as_of=_stamp(JAN + timedelta(days=1)))) == []
    assert listed(memories, as_of=_stamp(JAN + timedelta(days=1))) == []
    memories.DeleteMemory(pb.DeleteMemoryRequest(name=paris.memory.name))
    assert listed(memories, as_of=_stamp(JUN)) == []


def test_an_empty_time_range_is_refused(memories: Stub) -> None:
    try:
        recall(memories, "x", event_time_after=_stamp(MAR), event_time_before=_stamp(JAN))
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "event_time_before" in (error.details() or "")
    else:
        raise AssertionError("an empty range was accepted")


def test_ten_identical_saves_store_one_entry(memories: Stub) -> None:
    saves = [_save(memories, text) for text in ["Ada is vegan."] + ["ada is  VEGAN!"] * 9]
    assert [s.outcome for s in saves] == [pb.SAVE_OUTCOME_CREATED] + [pb.SAVE_OUTCOME_DUPLICATE] * 9
    assert {s.memory.name for s in saves} == {saves[0].memory.name}
    assert [m.text for m in listed(memories)] == ["Ada is vegan."]
    assert texts(recall(memories, "vegan")) == ["Ada is vegan."]
    different = _save(memories, "Ada is not vegan.")
    assert different.outcome == pb.SAVE_OUTCOME_CREATED


def test_sameness_respects_scope_conversation_and_key(memories: Stub) -> None:
    identity = _save(memories, "Prefers tea")
    scoped = _save(memories, "Prefers tea", scope=pb.MEMORY_SCOPE_CONVERSATION, conversation=C1)
    assert scoped.outcome == pb.SAVE_OUTCOME_CREATED
    assert scoped.memory.name != identity.memory.name
    keyed = _save(memories, "Prefers tea", key="drink")
    assert keyed.outcome == pb.SAVE_OUTCOME_CREATED  # a key's chain never borrows another entry
    again = _save(memories, "prefers tea.", key="drink")
    assert again.outcome == pb.SAVE_OUTCOME_DUPLICATE
    assert again.memory.name == keyed.memory.name and not again.archived
    unkeyed = _save(memories, "Prefers tea")
    assert unkeyed.outcome == pb.SAVE_OUTCOME_DUPLICATE


def test_duplicates_within_one_batch_store_one_entry(memories: Stub) -> None:
    batch = memories.BatchCreateMemories(
        pb.BatchCreateMemoriesRequest(
            parent=USER,
            requests=[
                pb.CreateMemoryRequest(memory=pb.Memory(text=text))
                for text in ("Likes jazz", "Likes rock", "likes jazz.")
            ],
        )
    )
    assert list(batch.outcomes) == [
        pb.SAVE_OUTCOME_CREATED,
        pb.SAVE_OUTCOME_CREATED,
        pb.SAVE_OUTCOME_DUPLICATE,
    ]
    assert batch.memories[2].name == batch.memories[0].name
    assert sorted(m.text for m in listed(memories)) == ["Likes jazz", "Likes rock"]


def test_two_devices_saving_the_same_fact_at_once_store_it_once(memories: Stub) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        saved = list(pool.map(lambda n: _save(memories, "Allergic to peanuts"), range(16)))
    assert len({s.memory.name for s in saved}) == 1
    assert sorted(s.outcome for s in saved).count(pb.SAVE_OUTCOME_CREATED) == 1
    assert [m.text for m in listed(memories)] == ["Allergic to peanuts"]


def test_the_near_duplicate_check_is_off_by_default_and_on_when_asked(
    database_url: str,
) -> None:
    """With the shipped model: a reordered sentence is the same fact (cosine
    above the threshold on the labelled pairs), a negation is not."""
    with (
        running_server(database_url, embedder="local") as target,
        grpc.insecure_channel(target) as channel,
    ):
        stub = Stub(channel)
        first = _save(stub, "Ada moved to Lisbon in March")
        reordered = "In March Ada moved to Lisbon"
        plain = stub.CreateMemory(
            pb.CreateMemoryRequest(parent=USER, memory=pb.Memory(text=reordered))
        )
        assert plain.outcome == pb.SAVE_OUTCOME_CREATED  # off by default
        stub.DeleteMemory(pb.DeleteMemoryRequest(name=plain.memory.name))
        checked = stub.CreateMemory(
            pb.CreateMemoryRequest(
                parent=USER, memory=pb.Memory(text=reordered), near_duplicates=True
            )
        )
        assert checked.outcome == pb.SAVE_OUTCOME_DUPLICATE
        assert checked.memory.name == first.memory.name
        negated = stub.CreateMemory(
            pb.CreateMemoryRequest(
                parent=USER,
                memory=pb.Memory(text="Ada did not move to Lisbon"),
                near_duplicates=True,
            )
        )
        assert negated.outcome == pb.SAVE_OUTCOME_CREATED


def test_the_near_duplicate_check_without_an_embedder_is_refused(database_url: str) -> None:
    with (
        running_server(database_url, embedder="none") as target,
        grpc.insecure_channel(target) as channel,
    ):
        try:
            Stub(channel).CreateMemory(
                pb.CreateMemoryRequest(
                    parent=USER, memory=pb.Memory(text="x"), near_duplicates=True
                )
            )
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        else:
            raise AssertionError("the check ran without an embedder")


def test_an_updated_text_is_what_sameness_compares(memories: Stub) -> None:
    saved = _save(memories, "Likes green tea").memory
    memories.UpdateMemory(
        pb.UpdateMemoryRequest(memory=pb.Memory(name=saved.name, text="Likes black coffee"))
    )
    assert _save(memories, "likes black coffee.").outcome == pb.SAVE_OUTCOME_DUPLICATE
    assert _save(memories, "Likes green tea").outcome == pb.SAVE_OUTCOME_CREATED


def test_semantic_recall_as_of_a_time_ranks_the_views_vectors(memories: Stub) -> None:
    for text, at, values in (
        ("Drives a red bike", JAN, (1.0, 0.0, 0.0, 0.0)),
        ("Drives a blue car", JUN, (0.0, 1.0, 0.0, 0.0)),
    ):
        _save(memories, text, at=at, key="vehicle", embedding=vector(*values))
    query = vector(0.9, 0.1, 0.0, 0.0)
    then = recall(memories, "", query_embedding=query, semantic=True, as_of=_stamp(MAR))
    assert texts(then) == ["Drives a red bike"]
    now = recall(memories, "", query_embedding=query, semantic=True)
    assert texts(now) == ["Drives a blue car"]  # the only live entry
