"""Conversations through a real server, with the blocking and the asyncio client."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import json_format

from mnemo.client import (
    AlreadyExistsError,
    EtagMismatchError,
    InvalidArgumentError,
    MnemoClient,
    NotFoundError,
)


def test_create_then_get(client: MnemoClient, other_client: MnemoClient, user: str) -> None:
    created = client.create_conversation(user, "s1", metadata={"title": "Trip", "tags": ["a"]})

    read = other_client.get_conversation(user, "s1")
    assert read == created
    assert read.name == f"users/{user}/conversations/s1"
    assert json_format.MessageToDict(read.metadata) == {"title": "Trip", "tags": ["a"]}
    assert (read.temporary, read.message_count) == (False, 0)


def test_the_server_chooses_an_id_when_none_is_given(client: MnemoClient, user: str) -> None:
    created = client.create_conversation(user, temporary=True)

    assert created.name.startswith(f"users/{user}/conversations/")
    assert created.temporary


def test_a_taken_id_already_exists_unless_the_request_is_repeated(
    client: MnemoClient, user: str
) -> None:
    first = client.create_conversation(user, "s1", request_id="create-s1")

    assert client.create_conversation(user, "s1", request_id="create-s1") == first
    with pytest.raises(AlreadyExistsError) as raised:
        client.create_conversation(user, "s1")
    assert (raised.value.code, raised.value.reason) == (
        grpc.StatusCode.ALREADY_EXISTS,
        "ALREADY_EXISTS",
    )


def test_listing_follows_every_page(client: MnemoClient, user: str) -> None:
    names = {client.create_conversation(user, f"s{number}").name for number in range(5)}

    listed = [conversation.name for conversation in client.list_conversations(user, page_size=2)]

    assert sorted(listed) == sorted(names)
    first = client.list_conversations_page(user, page_size=3)
    second = client.list_conversations_page(user, page_size=3, page_token=first.next_page_token)
    assert [c.name for c in (*first.items, *second.items)] == listed
    assert second.next_page_token == ""


def test_update_metadata_is_conditional_on_the_etag(client: MnemoClient, user: str) -> None:
    created = client.create_conversation(user, "s1", metadata={"v": 1})

    updated = client.update_conversation_metadata(user, "s1", {"v": 2}, etag=created.etag)

    assert json_format.MessageToDict(updated.metadata) == {"v": 2}
    with pytest.raises(EtagMismatchError) as raised:
        client.update_conversation_metadata(user, "s1", {"v": 3}, etag=created.etag)
    assert raised.value.reason == "ETAG_MISMATCH"


def test_delete_then_get_is_not_found(client: MnemoClient, user: str) -> None:
    client.create_conversation(user, "s1")

    client.delete_conversation(user, "s1")

    with pytest.raises(NotFoundError) as raised:
        client.get_conversation(user, "s1")
    assert raised.value.reason == "NOT_FOUND"
    assert raised.value.metadata["name"] == f"users/{user}/conversations/s1"
    with pytest.raises(NotFoundError):
        client.delete_conversation(user, "s1")


def test_a_foreign_page_token_is_invalid(client: MnemoClient, user: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        client.list_conversations_page(user, page_token="not-a-token")

    assert raised.value.reason == "INVALID_PAGE_TOKEN"
