import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from mnemo.v1 import checkpoints_pb2 as _checkpoints_pb2
from mnemo.v1 import conversations_pb2 as _conversations_pb2
from mnemo.v1 import documents_pb2 as _documents_pb2
from mnemo.v1 import governance_pb2 as _governance_pb2
from mnemo.v1 import memories_pb2 as _memories_pb2
from mnemo.v1 import working_memory_pb2 as _working_memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChangeOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHANGE_OPERATION_UNSPECIFIED: _ClassVar[ChangeOperation]
    CHANGE_OPERATION_UPSERT: _ClassVar[ChangeOperation]
    CHANGE_OPERATION_DELETE: _ClassVar[ChangeOperation]
    CHANGE_OPERATION_ERASE: _ClassVar[ChangeOperation]
CHANGE_OPERATION_UNSPECIFIED: ChangeOperation
CHANGE_OPERATION_UPSERT: ChangeOperation
CHANGE_OPERATION_DELETE: ChangeOperation
CHANGE_OPERATION_ERASE: ChangeOperation

class Change(_message.Message):
    __slots__ = ("cursor", "operation", "resource_name", "etag", "change_time", "memory_state", "conversation", "message", "memory", "tombstone", "memory_settings", "consent", "candidate", "failed_run", "document", "checkpoint")
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    CHANGE_TIME_FIELD_NUMBER: _ClassVar[int]
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    TOMBSTONE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    CONSENT_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    FAILED_RUN_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    cursor: int
    operation: ChangeOperation
    resource_name: str
    etag: str
    change_time: _timestamp_pb2.Timestamp
    memory_state: _working_memory_pb2.MemoryState
    conversation: _conversations_pb2.Conversation
    message: _conversations_pb2.HistoryMessage
    memory: _memories_pb2.Memory
    tombstone: _memories_pb2.MemoryTombstone
    memory_settings: _governance_pb2.MemorySettings
    consent: _governance_pb2.Consent
    candidate: _memories_pb2.MemoryCandidate
    failed_run: _conversations_pb2.FailedRun
    document: _documents_pb2.Document
    checkpoint: _checkpoints_pb2.Checkpoint
    def __init__(self, cursor: _Optional[int] = ..., operation: _Optional[_Union[ChangeOperation, str]] = ..., resource_name: _Optional[str] = ..., etag: _Optional[str] = ..., change_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., memory_state: _Optional[_Union[_working_memory_pb2.MemoryState, _Mapping]] = ..., conversation: _Optional[_Union[_conversations_pb2.Conversation, _Mapping]] = ..., message: _Optional[_Union[_conversations_pb2.HistoryMessage, _Mapping]] = ..., memory: _Optional[_Union[_memories_pb2.Memory, _Mapping]] = ..., tombstone: _Optional[_Union[_memories_pb2.MemoryTombstone, _Mapping]] = ..., memory_settings: _Optional[_Union[_governance_pb2.MemorySettings, _Mapping]] = ..., consent: _Optional[_Union[_governance_pb2.Consent, _Mapping]] = ..., candidate: _Optional[_Union[_memories_pb2.MemoryCandidate, _Mapping]] = ..., failed_run: _Optional[_Union[_conversations_pb2.FailedRun, _Mapping]] = ..., document: _Optional[_Union[_documents_pb2.Document, _Mapping]] = ..., checkpoint: _Optional[_Union[_checkpoints_pb2.Checkpoint, _Mapping]] = ...) -> None: ...

class ListChangesRequest(_message.Message):
    __slots__ = ("parent", "after_cursor", "page_size")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    AFTER_CURSOR_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    parent: str
    after_cursor: int
    page_size: int
    def __init__(self, parent: _Optional[str] = ..., after_cursor: _Optional[int] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListChangesResponse(_message.Message):
    __slots__ = ("changes", "next_cursor", "latest_cursor", "oldest_cursor")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    LATEST_CURSOR_FIELD_NUMBER: _ClassVar[int]
    OLDEST_CURSOR_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[Change]
    next_cursor: int
    latest_cursor: int
    oldest_cursor: int
    def __init__(self, changes: _Optional[_Iterable[_Union[Change, _Mapping]]] = ..., next_cursor: _Optional[int] = ..., latest_cursor: _Optional[int] = ..., oldest_cursor: _Optional[int] = ...) -> None: ...

class WatchChangesRequest(_message.Message):
    __slots__ = ("parent", "after_cursor")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    AFTER_CURSOR_FIELD_NUMBER: _ClassVar[int]
    parent: str
    after_cursor: int
    def __init__(self, parent: _Optional[str] = ..., after_cursor: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("cursor", "time")
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    cursor: int
    time: _timestamp_pb2.Timestamp
    def __init__(self, cursor: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WatchChangesResponse(_message.Message):
    __slots__ = ("change", "heartbeat")
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    change: Change
    heartbeat: Heartbeat
    def __init__(self, change: _Optional[_Union[Change, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...
