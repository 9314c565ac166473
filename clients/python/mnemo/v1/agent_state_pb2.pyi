import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppState(_message.Message):
    __slots__ = ("name", "state_json", "etag", "update_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_JSON_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    state_json: str
    etag: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., state_json: _Optional[str] = ..., etag: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetAppStateRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetAppStateResponse(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: AppState
    def __init__(self, state: _Optional[_Union[AppState, _Mapping]] = ...) -> None: ...

class UpdateAppStateRequest(_message.Message):
    __slots__ = ("name", "delta_json", "etag")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DELTA_JSON_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    name: str
    delta_json: str
    etag: str
    def __init__(self, name: _Optional[str] = ..., delta_json: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class UpdateAppStateResponse(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: AppState
    def __init__(self, state: _Optional[_Union[AppState, _Mapping]] = ...) -> None: ...
