import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryState(_message.Message):
    __slots__ = ("name", "summary", "recent", "etag", "update_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    RECENT_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    summary: str
    recent: _containers.RepeatedCompositeFieldContainer[Exchange]
    etag: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., summary: _Optional[str] = ..., recent: _Optional[_Iterable[_Union[Exchange, _Mapping]]] = ..., etag: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Exchange(_message.Message):
    __slots__ = ("ask", "answer", "at")
    ASK_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    ask: str
    answer: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, ask: _Optional[str] = ..., answer: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetMemoryStateRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetMemoryStateResponse(_message.Message):
    __slots__ = ("memory_state",)
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    memory_state: MemoryState
    def __init__(self, memory_state: _Optional[_Union[MemoryState, _Mapping]] = ...) -> None: ...

class SaveMemoryStateRequest(_message.Message):
    __slots__ = ("memory_state",)
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    memory_state: MemoryState
    def __init__(self, memory_state: _Optional[_Union[MemoryState, _Mapping]] = ...) -> None: ...

class SaveMemoryStateResponse(_message.Message):
    __slots__ = ("memory_state", "change_cursor")
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memory_state: MemoryState
    change_cursor: int
    def __init__(self, memory_state: _Optional[_Union[MemoryState, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class RememberExchangeRequest(_message.Message):
    __slots__ = ("name", "exchange", "keep_recent", "summary", "etag", "request_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    KEEP_RECENT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    exchange: Exchange
    keep_recent: int
    summary: str
    etag: str
    request_id: str
    def __init__(self, name: _Optional[str] = ..., exchange: _Optional[_Union[Exchange, _Mapping]] = ..., keep_recent: _Optional[int] = ..., summary: _Optional[str] = ..., etag: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class RememberExchangeResponse(_message.Message):
    __slots__ = ("memory_state", "evicted", "change_cursor")
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    EVICTED_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memory_state: MemoryState
    evicted: _containers.RepeatedCompositeFieldContainer[Exchange]
    change_cursor: int
    def __init__(self, memory_state: _Optional[_Union[MemoryState, _Mapping]] = ..., evicted: _Optional[_Iterable[_Union[Exchange, _Mapping]]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class ClearMemoryStateRequest(_message.Message):
    __slots__ = ("name", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class ClearMemoryStateResponse(_message.Message):
    __slots__ = ("memory_state", "change_cursor")
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memory_state: MemoryState
    change_cursor: int
    def __init__(self, memory_state: _Optional[_Union[MemoryState, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...
