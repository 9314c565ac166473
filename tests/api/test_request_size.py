"""--max-request-bytes: gRPC itself refuses a larger request, before any handler.

Such a refusal is RESOURCE_EXHAUSTED from the gRPC library, without an
ErrorInfo (no Mnemo code runs); docs/operations.md describes how the limit
relates to --max-message-bytes and --max-messages-per-append.
"""

from __future__ import annotations

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from tests.api.history import message
from tests.support.server import running_server


def test_a_request_above_the_limit_is_refused_and_one_below_is_served(database_url: str) -> None:
    with (
        running_server(database_url, max_message_bytes=2_000, max_request_bytes=8_000) as target,
        grpc.insecure_channel(target) as channel,
    ):
        stub = conversations_pb2_grpc.ConversationServiceStub(channel)
        fits = [message("x" * 1_500) for _ in range(4)]
        too_many = [message("x" * 1_500) for _ in range(6)]
        conversation = "users/u1/conversations/c1"
        stub.AppendMessages(cv.AppendMessagesRequest(conversation=conversation, messages=fits))
        try:
            stub.AppendMessages(
                cv.AppendMessagesRequest(conversation=conversation, messages=too_many), timeout=10
            )
        except grpc.RpcError as error:
            assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        else:
            raise AssertionError("a request above --max-request-bytes was served")
