"""Event time (``Memory.event_time``): when an entry's fact was stated or
observed, beside when it was stored. Unset, it is the save's time; set by the
client, it is kept by every read, by updates, by the version history and by
export and import; out of bounds it is refused with its field named; on both
stores."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf import field_mask_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import memories_pb2 as pb
from mnemo.v1.conversations_pb2_grpc import ConversationServiceStub as ConversationStub
from tests.api.memories import USER, Stub, create, listed, versions
from tests.api.user_data import export, load
from tests.support.rpc_errors import rpc_failure

LAST_YEAR = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)


def _stamp(value: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(value)
    return stamp


def test_unset_it_is_the_saves_time_and_set_it_is_kept(memories: Stub) -> None:
    now = create(memories, "Lives in Oslo")
    assert now.HasField("event_time") and now.event_time == now.create_time
    then = create(memories, "Lived in Berlin", event_time=_stamp(LAST_YEAR))
    assert then.event_time.ToDatetime(UTC) == LAST_YEAR
    assert then.create_time.ToDatetime(UTC) > LAST_YEAR
    got = memories.GetMemory(pb.GetMemoryRequest(name=then.name)).memory
    assert got.event_time == then.event_time
    assert {m.text: m.event_time.ToDatetime(UTC) for m in listed(memories)}["Lived in Berlin"] == (
        LAST_YEAR
    )


def test_a_batch_keeps_each_entrys_own_and_an_update_keeps_it(memories: Stub) -> None:
    days = [LAST_YEAR + timedelta(days=n) for n in range(3)]
    saved = memories.BatchCreateMemories(
        pb.BatchCreateMemoriesRequest(
            parent=USER,
            requests=[
                pb.CreateMemoryRequest(memory=pb.Memory(text=f"day {n}", event_time=_stamp(d)))
                for n, d in enumerate(days)
            ],
        )
    ).memories
    assert [m.event_time.ToDatetime(UTC) for m in saved] == days
    updated = memories.UpdateMemory(
        pb.UpdateMemoryRequest(
            memory=pb.Memory(name=saved[0].name, text="day zero"),
            update_mask=field_mask_pb2.FieldMask(paths=["text"]),
        )
    ).memory
    assert updated.event_time == saved[0].event_time
    assert [v.event_time.ToDatetime(UTC) for v in versions(memories, saved[0].name)] == [
        days[0],
        days[0],
    ]


def test_out_of_bounds_it_is_refused_naming_the_field(memories: Stub) -> None:
    ahead = datetime.now(UTC) + timedelta(days=2)
    for value, says in (
        (ahead, "more than 24 hours ahead"),
        (datetime(1969, 12, 31, tzinfo=UTC), "before 1970-01-01"),
    ):
        failure = rpc_failure(
            memories.CreateMemory,
            pb.CreateMemoryRequest(
                parent=USER, memory=pb.Memory(text="When?", event_time=_stamp(value))
            ),
        )
        assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
        assert failure.reason == "INVALID_FIELD"
        assert [field for field, _ in failure.violations] == ["memory.event_time"]
        assert says in failure.violations[0][1]
    assert listed(memories) == []  # nothing stored


def test_export_and_import_keep_it(channel: grpc.Channel, memories: Stub) -> None:
    create(memories, "Lived in Berlin", event_time=_stamp(LAST_YEAR), parent="users/exported")
    records = export(channel, "exported")
    (memory,) = [r.memory for r in records if r.HasField("memory")]
    assert memory.event_time.ToDatetime(UTC) == LAST_YEAR
    for record in records:  # the same records, as another user's
        for holder in (record.memory,) if record.HasField("memory") else ():
            holder.name = holder.name.replace("users/exported/", "users/imported/")
    load(channel, "imported", [r for r in records if r.HasField("memory")])
    (restored,) = listed(memories, parent="users/imported")
    assert restored.event_time.ToDatetime(UTC) == LAST_YEAR


def test_a_listing_takes_an_event_time_range(memories: Stub) -> None:
    days = [LAST_YEAR + timedelta(days=n) for n in range(4)]
    for n, day in enumerate(days):
        create(memories, f"day {n}", event_time=_stamp(day))
    create(memories, "today")

    def texts(**bounds: datetime) -> list[str]:
        request = pb.ListMemoriesRequest(
            parent=USER, **{name: _stamp(value) for name, value in bounds.items()}
        )
        return sorted(m.text for m in memories.ListMemories(request).memories)

    assert texts(event_time_after=days[1]) == ["day 1", "day 2", "day 3", "today"]
    assert texts(event_time_before=days[2]) == ["day 0", "day 1"]
    assert texts(event_time_after=days[1], event_time_before=days[3]) == ["day 1", "day 2"]
    failure = rpc_failure(
        memories.ListMemories,
        pb.ListMemoriesRequest(
            parent=USER, event_time_after=_stamp(days[2]), event_time_before=_stamp(days[1])
        ),
    )
    assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in failure.violations] == ["event_time_before"]
    # A page token is bound to the range.
    first = memories.ListMemories(
        pb.ListMemoriesRequest(parent=USER, page_size=1, event_time_after=_stamp(days[0]))
    )
    moved = rpc_failure(
        memories.ListMemories,
        pb.ListMemoriesRequest(
            parent=USER,
            page_size=1,
            page_token=first.next_page_token,
            event_time_after=_stamp(days[1]),
        ),
    )
    assert moved.code is grpc.StatusCode.INVALID_ARGUMENT


def test_messages_appended_after_the_fact_keep_their_time(
    conversations: ConversationStub,
) -> None:
    conversation = f"{USER}/conversations/imported-chat"
    said = [LAST_YEAR, LAST_YEAR + timedelta(minutes=1)]
    conversations.AppendMessages(
        cv.AppendMessagesRequest(
            conversation=conversation,
            messages=[
                cv.HistoryMessage(message_json=message, event_time=_stamp(at))
                for message, at in zip(chat_json("hi", "hello"), said, strict=True)
            ],
        )
    )
    conversations.AppendMessages(
        cv.AppendMessagesRequest(
            conversation=conversation,
            messages=[cv.HistoryMessage(message_json=chat_json("now")[0])],
        )
    )
    listed_messages = conversations.ListMessages(
        cv.ListMessagesRequest(parent=conversation)
    ).messages
    assert [m.event_time.ToDatetime(UTC) for m in listed_messages[:2]] == said
    assert listed_messages[2].event_time == listed_messages[2].create_time
    failure = rpc_failure(
        conversations.AppendMessages,
        cv.AppendMessagesRequest(
            conversation=conversation,
            messages=[
                cv.HistoryMessage(
                    message_json=chat_json("later")[0],
                    event_time=_stamp(datetime.now(UTC) + timedelta(days=2)),
                )
            ],
        ),
    )
    assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in failure.violations] == ["messages[0].event_time"]


def chat_json(*texts: str) -> list[str]:
    return [json.dumps({"role": "user", "content": text}) for text in texts]


def test_extraction_dates_what_it_finds_by_the_message(memories: Stub) -> None:
    said = cv.HistoryMessage(
        message_json=chat_json("My name is Ada.")[0], event_time=_stamp(LAST_YEAR)
    )
    found = memories.ExtractMemories(
        pb.ExtractMemoriesRequest(parent=USER, messages=[said], require_approval=True)
    ).candidates
    assert [c.memory.event_time.ToDatetime(UTC) for c in found] == [LAST_YEAR]
    approved = memories.ApproveMemoryCandidate(
        pb.ApproveMemoryCandidateRequest(name=found[0].name)
    ).memory
    assert approved.event_time.ToDatetime(UTC) == LAST_YEAR
    saved = memories.ExtractMemories(
        pb.ExtractMemoriesRequest(
            parent="users/other",
            messages=[said],
        )
    ).memories
    assert [m.event_time.ToDatetime(UTC) for m in saved] == [LAST_YEAR]
