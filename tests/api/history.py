"""Shared builders for the conversation-history API tests."""

from __future__ import annotations

import json
from typing import Any

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc

Stub = conversations_pb2_grpc.ConversationServiceStub


def message(text: str, role: str = "user") -> cv.HistoryMessage:
    return cv.HistoryMessage(message_json=json.dumps({"role": role, "content": text}))


def append(stub: Stub, conversation: str, *texts: str, **kwargs: Any) -> cv.AppendMessagesResponse:
    request = cv.AppendMessagesRequest(
        conversation=conversation, messages=[message(t) for t in texts], **kwargs
    )
    response: cv.AppendMessagesResponse = stub.AppendMessages(request)
    return response


def all_messages(stub: Stub, parent: str, page_size: int = 0) -> list[cv.HistoryMessage]:
    """Every canonical message, through ListMessages page by page."""
    result: list[cv.HistoryMessage] = []
    token = ""
    while True:
        page = stub.ListMessages(
            cv.ListMessagesRequest(parent=parent, page_size=page_size, page_token=token)
        )
        result.extend(page.messages)
        token = page.next_page_token
        if not token:
            return result


def streamed_messages(stub: Stub, parent: str, batch_size: int = 0) -> list[cv.HistoryMessage]:
    return [
        m
        for batch in stub.StreamMessages(
            cv.StreamMessagesRequest(parent=parent, batch_size=batch_size)
        )
        for m in batch.messages
    ]


def contents(messages: list[cv.HistoryMessage]) -> list[Any]:
    return [json.loads(m.message_json)["content"] for m in messages]
