import datetime

from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Conversation(_message.Message):
    __slots__ = ("name", "metadata", "temporary", "create_time", "update_time", "message_count", "etag", "expire_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TEMPORARY_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    metadata: _struct_pb2.Struct
    temporary: bool
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    message_count: int
    etag: str
    expire_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., temporary: _Optional[bool] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., message_count: _Optional[int] = ..., etag: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class HistoryMessage(_message.Message):
    __slots__ = ("name", "position", "run_id", "turn", "create_time", "role", "message_json", "text", "compacted", "event_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_JSON_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    COMPACTED_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    position: int
    run_id: str
    turn: int
    create_time: _timestamp_pb2.Timestamp
    role: str
    message_json: str
    text: str
    compacted: bool
    event_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., position: _Optional[int] = ..., run_id: _Optional[str] = ..., turn: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., role: _Optional[str] = ..., message_json: _Optional[str] = ..., text: _Optional[str] = ..., compacted: _Optional[bool] = ..., event_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RunError(_message.Message):
    __slots__ = ("message", "code", "details_json")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    message: str
    code: str
    details_json: str
    def __init__(self, message: _Optional[str] = ..., code: _Optional[str] = ..., details_json: _Optional[str] = ...) -> None: ...

class FailedRun(_message.Message):
    __slots__ = ("name", "run_id", "error", "messages", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    run_id: str
    error: RunError
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., run_id: _Optional[str] = ..., error: _Optional[_Union[RunError, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateConversationRequest(_message.Message):
    __slots__ = ("parent", "conversation_id", "conversation", "request_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    conversation_id: str
    conversation: Conversation
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., conversation_id: _Optional[str] = ..., conversation: _Optional[_Union[Conversation, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateConversationResponse(_message.Message):
    __slots__ = ("conversation", "change_cursor")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    change_cursor: int
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class GetConversationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class ListConversationsRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListConversationsResponse(_message.Message):
    __slots__ = ("conversations", "next_page_token")
    CONVERSATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    conversations: _containers.RepeatedCompositeFieldContainer[Conversation]
    next_page_token: str
    def __init__(self, conversations: _Optional[_Iterable[_Union[Conversation, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class UpdateConversationRequest(_message.Message):
    __slots__ = ("conversation", "update_mask")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateConversationResponse(_message.Message):
    __slots__ = ("conversation", "change_cursor")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    change_cursor: int
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class DeleteConversationRequest(_message.Message):
    __slots__ = ("name", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class DeleteConversationResponse(_message.Message):
    __slots__ = ("change_cursor",)
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    change_cursor: int
    def __init__(self, change_cursor: _Optional[int] = ...) -> None: ...

class AppendMessagesRequest(_message.Message):
    __slots__ = ("conversation", "messages", "run_id", "turn", "request_id", "expected_position", "metadata")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_POSITION_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    conversation: str
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    run_id: str
    turn: int
    request_id: str
    expected_position: int
    metadata: _struct_pb2.Struct
    def __init__(self, conversation: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., run_id: _Optional[str] = ..., turn: _Optional[int] = ..., request_id: _Optional[str] = ..., expected_position: _Optional[int] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class AppendMessagesResponse(_message.Message):
    __slots__ = ("messages", "conversation", "change_cursor")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    conversation: Conversation
    change_cursor: int
    def __init__(self, messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., conversation: _Optional[_Union[Conversation, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class ListMessagesRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token", "start_position")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    START_POSITION_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    start_position: int
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., start_position: _Optional[int] = ...) -> None: ...

class ListMessagesResponse(_message.Message):
    __slots__ = ("messages", "next_page_token")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    next_page_token: str
    def __init__(self, messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class StreamMessagesRequest(_message.Message):
    __slots__ = ("parent", "start_position", "batch_size")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    START_POSITION_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    parent: str
    start_position: int
    batch_size: int
    def __init__(self, parent: _Optional[str] = ..., start_position: _Optional[int] = ..., batch_size: _Optional[int] = ...) -> None: ...

class StreamMessagesResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    def __init__(self, messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ...) -> None: ...

class ClearMessagesRequest(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: str
    def __init__(self, conversation: _Optional[str] = ...) -> None: ...

class ClearMessagesResponse(_message.Message):
    __slots__ = ("conversation", "change_cursor")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    change_cursor: int
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class GetMessageRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: HistoryMessage
    def __init__(self, message: _Optional[_Union[HistoryMessage, _Mapping]] = ...) -> None: ...

class PopMessagesRequest(_message.Message):
    __slots__ = ("conversation", "count", "expected_next_position", "request_id")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_NEXT_POSITION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    conversation: str
    count: int
    expected_next_position: int
    request_id: str
    def __init__(self, conversation: _Optional[str] = ..., count: _Optional[int] = ..., expected_next_position: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class PopMessagesResponse(_message.Message):
    __slots__ = ("messages", "conversation", "change_cursor")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    conversation: Conversation
    change_cursor: int
    def __init__(self, messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., conversation: _Optional[_Union[Conversation, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class RecordFailedRunRequest(_message.Message):
    __slots__ = ("conversation", "run_id", "error", "messages", "request_id")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    conversation: str
    run_id: str
    error: RunError
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    request_id: str
    def __init__(self, conversation: _Optional[str] = ..., run_id: _Optional[str] = ..., error: _Optional[_Union[RunError, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class RecordFailedRunResponse(_message.Message):
    __slots__ = ("failed_run", "change_cursor")
    FAILED_RUN_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    failed_run: FailedRun
    change_cursor: int
    def __init__(self, failed_run: _Optional[_Union[FailedRun, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class ListFailedRunsRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListFailedRunsResponse(_message.Message):
    __slots__ = ("failed_runs", "next_page_token")
    FAILED_RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    failed_runs: _containers.RepeatedCompositeFieldContainer[FailedRun]
    next_page_token: str
    def __init__(self, failed_runs: _Optional[_Iterable[_Union[FailedRun, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class SnapshotHistoryRequest(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: str
    def __init__(self, conversation: _Optional[str] = ...) -> None: ...

class SnapshotHistoryResponse(_message.Message):
    __slots__ = ("revision", "messages")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    revision: str
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    def __init__(self, revision: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ...) -> None: ...

class ReplaceHistoryPrefixRequest(_message.Message):
    __slots__ = ("conversation", "revision", "message_count", "replacement", "run_id", "request_id")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    conversation: str
    revision: str
    message_count: int
    replacement: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    run_id: str
    request_id: str
    def __init__(self, conversation: _Optional[str] = ..., revision: _Optional[str] = ..., message_count: _Optional[int] = ..., replacement: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., run_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ReplaceHistoryPrefixResponse(_message.Message):
    __slots__ = ("revision", "messages", "change_cursor")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    revision: str
    messages: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    change_cursor: int
    def __init__(self, revision: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., change_cursor: _Optional[int] = ...) -> None: ...
