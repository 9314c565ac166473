"""Temporary conversations through a real server: nothing is remembered from
them, inject is empty in them, and after their expire time they are gone
(NOT_FOUND at once, purged by the server's background task)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import grpc
import pytest
from sqlalchemy import func, select

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, memories_pb2_grpc, working_memory_pb2_grpc
from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import working_memory_pb2 as wm
from mnemo_server.store import schema
from tests.api.governance import eventually, failure
from tests.api.history import message
from tests.api.memories import USER, create
from tests.support.server import running_server
from tests.support.user_rows import connected

T1 = f"{USER}/conversations/t1"


class Stubs:
    def __init__(self, channel: grpc.Channel) -> None:
        self.conversations = conversations_pb2_grpc.ConversationServiceStub(channel)
        self.memories = memories_pb2_grpc.MemoryServiceStub(channel)
        self.working = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)


@contextmanager
def _serving(database_url: str, purge_interval_seconds: float) -> Iterator[Stubs]:
    """A server whose temporary conversations live 1 s."""
    with (
        running_server(
            database_url, temporary_ttl_seconds=1, purge_interval_seconds=purge_interval_seconds
        ) as target,
        grpc.insecure_channel(target) as channel,
    ):
        yield Stubs(channel)


@pytest.fixture
def short_lived(database_url: str) -> Iterator[Stubs]:
    """Temporary conversations live 1 s and are purged every 0.2 s."""
    with _serving(database_url, 0.2) as stubs:
        yield stubs


@pytest.fixture
def never_purged(database_url: str) -> Iterator[Stubs]:
    """Temporary conversations live 1 s; the purge does not come during the test."""
    with _serving(database_url, 3600) as stubs:
        yield stubs


def _temporary_with_content(stubs: Stubs, conversation_id: str = "t1") -> cv.Conversation:
    created: cv.Conversation = stubs.conversations.CreateConversation(
        cv.CreateConversationRequest(
            parent=USER,
            conversation_id=conversation_id,
            conversation=cv.Conversation(temporary=True),
            request_id=f"create-{conversation_id}",
        )
    ).conversation
    name = created.name
    stubs.conversations.AppendMessages(
        cv.AppendMessagesRequest(
            conversation=name, messages=[message("My name is Ada")], request_id=f"a-{name[-2:]}"
        )
    )
    stubs.working.RememberExchange(
        wm.RememberExchangeRequest(
            name=f"{name}/memoryState", exchange=wm.Exchange(ask="Hi?", answer="Hello")
        )
    )
    return created


def _rows(database_url: str, conversation_id: str) -> dict[str, int]:
    """Rows of the user's conversation ``conversation_id`` and of what hangs off it."""
    conversations = schema.conversations
    with connected(database_url) as conn:
        pks = select(conversations.c.id).where(
            conversations.c.user_id == "u1", conversations.c.conversation_id == conversation_id
        )
        counts = {
            table.name: conn.execute(
                select(func.count()).select_from(table).where(table.c.conversation_pk.in_(pks))
            ).scalar_one()
            for table in (schema.messages, schema.working_memory)
        }
        counts["conversations"] = conn.execute(
            select(func.count()).select_from(pks.subquery())
        ).scalar_one()
        counts["idempotency_records"] = conn.execute(
            select(func.count())
            .select_from(schema.idempotency_records)
            .where(schema.idempotency_records.c.request_id == f"create-{conversation_id}")
        ).scalar_one()
    return counts


def test_nothing_is_remembered_from_a_temporary_conversation(short_lived: Stubs) -> None:
    memories = short_lived.memories
    created = _temporary_with_content(short_lived)
    assert created.temporary and created.HasField("expire_time")
    create(memories, "Lives in Oslo")
    refused = failure(
        lambda: create(
            memories, "Short answers", conversation=T1, scope=pb.MEMORY_SCOPE_CONVERSATION
        )
    )
    assert refused is not None
    assert (refused.code, refused.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "TEMPORARY_CONVERSATION",
    )
    assert refused.metadata["conversation"] == T1

    def context(conversation: str) -> str:
        request = pb.BuildContextRequest(parent=USER, query="Oslo", conversation=conversation)
        message: str = memories.BuildContext(request).system_message
        return message

    assert context(T1) == ""
    assert "Oslo" in context("")
    assert "Oslo" in context(f"{USER}/conversations/c1")


def _refused_as_temporary(call: Callable[[], object]) -> None:
    refused = failure(call)
    assert refused is not None
    assert (refused.code, refused.reason, refused.metadata["conversation"]) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "TEMPORARY_CONVERSATION",
        T1,
    )


def test_every_write_from_a_temporary_conversation_is_refused_whatever_its_scope(
    never_purged: Stubs,
) -> None:
    memories = never_purged.memories
    _temporary_with_content(never_purged)
    ordinary = never_purged.conversations.CreateConversation(
        cv.CreateConversationRequest(parent=USER, conversation_id="c1")
    ).conversation.name
    kept = create(memories, "Lives in Oslo", key="home")

    _refused_as_temporary(lambda: create(memories, "Works at night", origin_conversation=T1))
    _refused_as_temporary(
        lambda: memories.BatchCreateMemories(
            pb.BatchCreateMemoriesRequest(
                parent=USER,
                requests=[
                    pb.CreateMemoryRequest(memory=pb.Memory(text="First")),
                    pb.CreateMemoryRequest(memory=pb.Memory(text="Second"), origin_conversation=T1),
                ],
            )
        )
    )
    _refused_as_temporary(
        lambda: memories.UpdateMemory(
            pb.UpdateMemoryRequest(
                memory=pb.Memory(name=kept.name, text="Lives in Bergen"), origin_conversation=T1
            )
        )
    )
    _refused_as_temporary(
        lambda: memories.DeleteMemory(
            pb.DeleteMemoryRequest(name=kept.name, origin_conversation=T1)
        )
    )
    listed = memories.ListMemories(pb.ListMemoriesRequest(parent=USER)).memories
    assert [(m.name, m.text) for m in listed] == [(kept.name, "Lives in Oslo")]

    # From an ordinary conversation, and from none, the same writes succeed.
    create(memories, "Works at night", origin_conversation=ordinary)
    memories.UpdateMemory(
        pb.UpdateMemoryRequest(
            memory=pb.Memory(name=kept.name, text="Lives in Bergen"), origin_conversation=ordinary
        )
    )
    memories.DeleteMemory(pb.DeleteMemoryRequest(name=kept.name, origin_conversation=ordinary))


def test_an_origin_conversation_must_be_one_of_the_user(never_purged: Stubs) -> None:
    memories = never_purged.memories
    for origin in ("users/u2/conversations/c1", "conversations/c1", "users/u1/conversations/"):
        refused = failure(lambda o=origin: create(memories, "x", origin_conversation=o))  # type: ignore[misc]
        assert refused is not None
        assert (refused.code, refused.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")
        assert refused.fields == ("origin_conversation",)


def test_an_expired_temporary_conversation_is_purged(short_lived: Stubs, database_url: str) -> None:
    _temporary_with_content(short_lived)
    _temporary_with_content(short_lived, "t2")
    kept = short_lived.conversations.CreateConversation(
        cv.CreateConversationRequest(parent=USER, conversation_id="c1")
    ).conversation
    assert _rows(database_url, "t1") == {
        "messages": 1,
        "working_memory": 1,
        "conversations": 1,
        "idempotency_records": 1,
    }
    gone = dict.fromkeys(("messages", "working_memory", "conversations", "idempotency_records"), 0)
    for conversation_id in ("t1", "t2"):
        eventually(
            lambda c=conversation_id: True if _rows(database_url, c) == gone else None,  # type: ignore[misc]
            f"the purge of {conversation_id}",
        )
    assert (
        short_lived.conversations.GetConversation(
            cv.GetConversationRequest(name=kept.name)
        ).conversation.name
        == kept.name
    )


def test_an_expired_temporary_conversation_is_not_found_before_the_purge(
    never_purged: Stubs, database_url: str
) -> None:
    stubs = never_purged
    _temporary_with_content(stubs)
    history = stubs.conversations

    def expired() -> bool | None:
        got = failure(lambda: history.GetConversation(cv.GetConversationRequest(name=T1)))
        return True if got is not None and got.code is grpc.StatusCode.NOT_FOUND else None

    eventually(expired, "the conversation to expire")
    assert _rows(database_url, "t1")["conversations"] == 1  # not purged: hidden
    for call in (
        lambda: history.ListMessages(cv.ListMessagesRequest(parent=T1)),
        lambda: history.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=T1)),
        lambda: history.ClearMessages(cv.ClearMessagesRequest(conversation=T1)),
        lambda: history.DeleteConversation(cv.DeleteConversationRequest(name=T1)),
    ):
        got = failure(call)
        assert got is not None and got.code is grpc.StatusCode.NOT_FOUND
    listed = history.ListConversations(cv.ListConversationsRequest(parent=USER)).conversations
    assert [c.name for c in listed] == []
    state = stubs.working.GetMemoryState(wm.GetMemoryStateRequest(name=f"{T1}/memoryState"))
    assert (state.memory_state.summary, list(state.memory_state.recent)) == ("", [])

    # A write that creates conversations starts a new, ordinary one of that id.
    appended = history.AppendMessages(
        cv.AppendMessagesRequest(conversation=T1, messages=[message("hello again")])
    )
    assert not appended.conversation.temporary
    assert [m.position for m in appended.messages] == [0]
    assert _rows(database_url, "t1")["messages"] == 1
