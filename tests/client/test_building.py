"""The pure parts of the client: names, request ids, message JSON, channel options, API shape."""

from __future__ import annotations

import inspect
import json

import pytest
from google.protobuf import json_format

from mnemo.client import (
    AsyncMnemoClient,
    InvalidArgumentError,
    MnemoClient,
    service_config,
)
from mnemo.client import _conversations as conversations
from mnemo.client import _history as history
from mnemo.client import _working_memory as working_memory
from mnemo.client._channel_options import SERVICES, channel_options
from mnemo.v1 import (
    checkpoints_pb2,
    conversations_pb2,
    governance_pb2,
    memories_pb2,
    sync_pb2,
    working_memory_pb2,
)


def test_the_default_conversation_has_its_own_memory_state_name() -> None:
    assert working_memory.get_memory_state("u1").request.name == "users/u1/memoryState"
    assert working_memory.get_memory_state("u1", "").request.name == "users/u1/memoryState"
    assert (
        working_memory.get_memory_state("u1", "c1").request.name
        == "users/u1/conversations/c1/memoryState"
    )


@pytest.mark.parametrize(
    ("user", "conversation", "field"),
    [("u1/conversations/c2", "c1", "user"), ("u1", "c1/messages/0", "conversation")],
)
def test_an_id_with_a_slash_is_refused_before_sending(
    user: str, conversation: str, field: str
) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        history.append_messages(user, conversation, [{"role": "user", "content": "hi"}])

    assert raised.value.reason == "INVALID_NAME"
    assert [v.field for v in raised.value.field_violations] == [field]


def test_writes_get_a_fresh_request_id_unless_one_is_given() -> None:
    messages = [{"role": "user", "content": "hi"}]
    first = history.append_messages("u1", "c1", messages).request
    second = history.append_messages("u1", "c1", messages).request
    assert first.request_id and second.request_id
    assert first.request_id != second.request_id
    assert history.append_messages("u1", "c1", messages, request_id="r1").request.request_id == "r1"
    assert history.append_messages("u1", "c1", messages, request_id="").request.request_id == ""


@pytest.mark.parametrize(
    "request_message",
    [
        working_memory.remember_exchange("u1", ask="a", answer="b").request,
        conversations.create_conversation("u1").request,
        history.append_messages("u1", "c1", ["{}"]).request,
        history.record_failed_run("u1", "c1", run_id="r", error="e").request,
        history.pop_messages("u1", "c1").request,
        history.replace_history_prefix(
            "u1", "c1", revision="v", message_count=1, replacement=["{}"]
        ).request,
    ],
    ids=lambda request: type(request).__name__,
)
def test_every_retryable_write_carries_a_request_id(request_message: object) -> None:
    assert getattr(request_message, "request_id", "")


def test_messages_become_compact_utf8_json_and_strings_stay_verbatim() -> None:
    verbatim = '{ "role" : "user", "content" : "spaced" }'
    request = history.append_messages(
        "u1", "c1", [{"role": "user", "content": "café ☕", "n": [1, 2]}, verbatim]
    ).request
    assert [m.message_json for m in request.messages] == [
        '{"role":"user","content":"café ☕","n":[1,2]}',
        verbatim,
    ]


def test_optional_fields_stay_unset_when_not_given() -> None:
    plain = working_memory.remember_exchange("u1", ask="a", answer="b").request
    assert not plain.HasField("summary")
    assert not plain.exchange.HasField("at")
    assert not history.append_messages("u1", "c1", ["{}"]).request.HasField("expected_position")
    with_summary = working_memory.remember_exchange("u1", ask="a", answer="b", summary="")
    assert with_summary.request.HasField("summary")
    zero = history.append_messages("u1", "c1", ["{}"], expected_position=0).request
    assert zero.HasField("expected_position")


def test_failed_run_details_are_sent_as_json() -> None:
    request = history.record_failed_run(
        "u1", "c1", run_id="r", error="boom", error_code="E1", error_details={"retry": False}
    ).request
    assert request.error.details_json == '{"retry":false}'
    plain = history.record_failed_run("u1", "c1", run_id="r", error="boom").request
    assert plain.error.details_json == ""


def test_metadata_becomes_a_struct() -> None:
    request = conversations.create_conversation("u1", "c1", metadata={"a": {"b": [1, "x"]}})
    metadata = json_format.MessageToDict(request.request.conversation.metadata)
    assert metadata == {"a": {"b": [1.0, "x"]}}
    assert not conversations.create_conversation("u1").request.conversation.HasField("metadata")


def test_retries_cover_every_mnemo_service() -> None:
    declared = {
        service.full_name
        for module in (
            working_memory_pb2,
            conversations_pb2,
            memories_pb2,
            governance_pb2,
            sync_pb2,
            checkpoints_pb2,
        )
        for service in module.DESCRIPTOR.services_by_name.values()
    }
    assert set(SERVICES) == declared
    (method_config,) = service_config(5)["methodConfig"]
    assert {name["service"] for name in method_config["name"]} == declared
    assert method_config["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]


def test_channel_options_given_by_the_caller_replace_ours() -> None:
    options = dict(
        channel_options(4, [("grpc.enable_retries", 0), ("grpc.primary_user_agent", "x")])
    )
    assert options["grpc.enable_retries"] == 0
    assert (
        json.loads(options["grpc.service_config"])["methodConfig"][0]["retryPolicy"]["maxAttempts"]
        == 4
    )
    assert "grpc.service_config" not in dict(channel_options(1))
    with pytest.raises(ValueError, match="max_attempts"):
        channel_options(6)


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_")
    }


def test_both_clients_have_the_same_methods_and_signatures() -> None:
    sync_methods = _public_methods(MnemoClient)
    assert _public_methods(AsyncMnemoClient) == sync_methods
    assert (
        len(sync_methods) == 69
    )  # 50 + pop/get message, 5 document, 8 checkpoint, 2 app-state, 2 erasure-audit calls
    assert inspect.iscoroutinefunction(AsyncMnemoClient.close)


def test_methods_carry_the_builders_docs() -> None:
    method = MnemoClient.remember_exchange
    assert method.__qualname__ == "MnemoClient.remember_exchange"
    assert "EtagMismatchError" in (method.__doc__ or "")
    assert list(inspect.signature(method).parameters)[:3] == ["self", "user", "conversation"]
