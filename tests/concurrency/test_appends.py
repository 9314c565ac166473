"""Many concurrent appenders, with retries, leave a dense history without duplicates."""

from __future__ import annotations

import json
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from tests.api.history import Stub, all_messages

CLIENTS = 8
MESSAGES_PER_CLIENT = 100
# Two per call keeps the test quick on 2 cores (server and clients share one
# process) while 400 appends still interleave at random.
MESSAGES_PER_CALL = 2
RETRY_RATE = 0.1
CONVERSATION = "users/u1/conversations/busy"


def _client(target: str, client: int) -> int:
    """Append this client's messages, ``MESSAGES_PER_CALL`` per call; retry about
    10% of the calls under the same request_id, as a client that lost the
    response would."""
    rng = random.Random(client)
    retries = 0
    with grpc.insecure_channel(target) as channel:
        stub = conversations_pb2_grpc.ConversationServiceStub(channel)
        for call in range(0, MESSAGES_PER_CLIENT, MESSAGES_PER_CALL):
            texts = [
                json.dumps({"role": "user", "content": f"client {client} message {seq}"})
                for seq in range(call, call + MESSAGES_PER_CALL)
            ]
            request = cv.AppendMessagesRequest(
                conversation=CONVERSATION,
                messages=[cv.HistoryMessage(message_json=text) for text in texts],
                run_id=f"client-{client}",
                turn=call,
                request_id=f"client-{client}-{call}",
            )
            first = stub.AppendMessages(request, timeout=60)
            if rng.random() < RETRY_RATE:
                retries += 1
                again = stub.AppendMessages(request, timeout=60)
                assert again.messages == first.messages
    return retries


def test_eight_clients_appending_with_retries_leave_dense_positions(
    server: str, conversations: Stub
) -> None:
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        retries = sum(pool.map(lambda c: _client(server, c), range(CLIENTS)))
    calls = CLIENTS * MESSAGES_PER_CLIENT // MESSAGES_PER_CALL
    assert calls * RETRY_RATE / 2 < retries < calls * RETRY_RATE * 2  # about 10% retried

    history = all_messages(conversations, CONVERSATION, page_size=1000)
    total = CLIENTS * MESSAGES_PER_CLIENT
    assert [m.position for m in history] == list(range(total))
    texts = [json.loads(m.message_json)["content"] for m in history]
    assert len(set(texts)) == total  # no duplicates
    for client in range(CLIENTS):
        own = [t for t in texts if t.startswith(f"client {client} ")]
        # Every message of the client, in the order the client appended them.
        assert own == [f"client {client} message {seq}" for seq in range(MESSAGES_PER_CLIENT)]
    conversation = conversations.GetConversation(cv.GetConversationRequest(name=CONVERSATION))
    assert conversation.conversation.message_count == total


TWINS = 4
CALLS_PER_TWIN = 25


def _twin(target: str, client: int) -> None:
    """Send every append twice at the same moment under one request_id, as a
    client whose retry overtakes the original would: both calls answer the
    same positions."""
    with grpc.insecure_channel(target) as one, grpc.insecure_channel(target) as other:
        stubs = [conversations_pb2_grpc.ConversationServiceStub(c) for c in (one, other)]
        together = threading.Barrier(2, timeout=60)

        def send(stub: Stub, request: cv.AppendMessagesRequest) -> cv.AppendMessagesResponse:
            together.wait()
            response: cv.AppendMessagesResponse = stub.AppendMessages(request, timeout=60)
            return response

        with ThreadPoolExecutor(2) as pair:
            for call in range(CALLS_PER_TWIN):
                request = cv.AppendMessagesRequest(
                    conversation=CONVERSATION,
                    messages=[
                        cv.HistoryMessage(
                            message_json=json.dumps(
                                {"role": "user", "content": f"twin {client} message {call}"}
                            )
                        )
                    ],
                    request_id=f"twin-{client}-{call}",
                )
                first, second = pair.map(send, stubs, [request, request])
                assert [m.position for m in first.messages] == [m.position for m in second.messages]


def test_a_request_racing_its_own_retry_is_written_once(server: str, conversations: Stub) -> None:
    with ThreadPoolExecutor(TWINS) as pool:
        list(pool.map(lambda c: _twin(server, c), range(TWINS)))
    history = all_messages(conversations, CONVERSATION, page_size=1000)
    assert [m.position for m in history] == list(range(TWINS * CALLS_PER_TWIN))
    texts = sorted(json.loads(m.message_json)["content"] for m in history)
    assert texts == sorted(
        f"twin {client} message {call}" for client in range(TWINS) for call in range(CALLS_PER_TWIN)
    )
