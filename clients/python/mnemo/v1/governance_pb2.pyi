import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from mnemo.v1 import checkpoints_pb2 as _checkpoints_pb2
from mnemo.v1 import conversations_pb2 as _conversations_pb2
from mnemo.v1 import documents_pb2 as _documents_pb2
from mnemo.v1 import memories_pb2 as _memories_pb2
from mnemo.v1 import working_memory_pb2 as _working_memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConsentState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONSENT_STATE_UNSPECIFIED: _ClassVar[ConsentState]
    CONSENT_STATE_GRANTED: _ClassVar[ConsentState]
    CONSENT_STATE_WITHDRAWN: _ClassVar[ConsentState]

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_TYPE_UNSPECIFIED: _ClassVar[EventType]
    EVENT_TYPE_MEMORY_SAVED: _ClassVar[EventType]
    EVENT_TYPE_MEMORY_DELETED: _ClassVar[EventType]
    EVENT_TYPE_MEMORY_CLEARED: _ClassVar[EventType]
    EVENT_TYPE_MEMORY_RECALLED: _ClassVar[EventType]
    EVENT_TYPE_MEMORY_EXTRACTION_PROPOSED: _ClassVar[EventType]
    EVENT_TYPE_MEMORY_EXTRACTION_RESOLVED: _ClassVar[EventType]
    EVENT_TYPE_MEMORY_CONSENT_CHANGED: _ClassVar[EventType]
CONSENT_STATE_UNSPECIFIED: ConsentState
CONSENT_STATE_GRANTED: ConsentState
CONSENT_STATE_WITHDRAWN: ConsentState
EVENT_TYPE_UNSPECIFIED: EventType
EVENT_TYPE_MEMORY_SAVED: EventType
EVENT_TYPE_MEMORY_DELETED: EventType
EVENT_TYPE_MEMORY_CLEARED: EventType
EVENT_TYPE_MEMORY_RECALLED: EventType
EVENT_TYPE_MEMORY_EXTRACTION_PROPOSED: EventType
EVENT_TYPE_MEMORY_EXTRACTION_RESOLVED: EventType
EVENT_TYPE_MEMORY_CONSENT_CHANGED: EventType

class Consent(_message.Message):
    __slots__ = ("name", "state", "policy_version", "update_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: ConsentState
    policy_version: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., state: _Optional[_Union[ConsentState, str]] = ..., policy_version: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MemorySettings(_message.Message):
    __slots__ = ("name", "enabled", "etag", "update_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    enabled: bool
    etag: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., enabled: _Optional[bool] = ..., etag: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetConsentRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetConsentResponse(_message.Message):
    __slots__ = ("consent",)
    CONSENT_FIELD_NUMBER: _ClassVar[int]
    consent: Consent
    def __init__(self, consent: _Optional[_Union[Consent, _Mapping]] = ...) -> None: ...

class SetConsentRequest(_message.Message):
    __slots__ = ("consent",)
    CONSENT_FIELD_NUMBER: _ClassVar[int]
    consent: Consent
    def __init__(self, consent: _Optional[_Union[Consent, _Mapping]] = ...) -> None: ...

class SetConsentResponse(_message.Message):
    __slots__ = ("consent", "cancelled_candidates", "change_cursor")
    CONSENT_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    consent: Consent
    cancelled_candidates: int
    change_cursor: int
    def __init__(self, consent: _Optional[_Union[Consent, _Mapping]] = ..., cancelled_candidates: _Optional[int] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class GetMemorySettingsRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetMemorySettingsResponse(_message.Message):
    __slots__ = ("memory_settings",)
    MEMORY_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    memory_settings: MemorySettings
    def __init__(self, memory_settings: _Optional[_Union[MemorySettings, _Mapping]] = ...) -> None: ...

class UpdateMemorySettingsRequest(_message.Message):
    __slots__ = ("memory_settings",)
    MEMORY_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    memory_settings: MemorySettings
    def __init__(self, memory_settings: _Optional[_Union[MemorySettings, _Mapping]] = ...) -> None: ...

class UpdateMemorySettingsResponse(_message.Message):
    __slots__ = ("memory_settings", "change_cursor")
    MEMORY_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memory_settings: MemorySettings
    change_cursor: int
    def __init__(self, memory_settings: _Optional[_Union[MemorySettings, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class ExportRecord(_message.Message):
    __slots__ = ("conversation", "message", "failed_run", "memory_state", "memory", "tombstone", "candidate", "consent", "memory_settings", "event", "memory_version", "compaction_checkpoint", "document", "checkpoint")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FAILED_RUN_FIELD_NUMBER: _ClassVar[int]
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    TOMBSTONE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    CONSENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_VERSION_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    conversation: _conversations_pb2.Conversation
    message: _conversations_pb2.HistoryMessage
    failed_run: _conversations_pb2.FailedRun
    memory_state: _working_memory_pb2.MemoryState
    memory: _memories_pb2.Memory
    tombstone: _memories_pb2.MemoryTombstone
    candidate: _memories_pb2.MemoryCandidate
    consent: Consent
    memory_settings: MemorySettings
    event: Event
    memory_version: _memories_pb2.Memory
    compaction_checkpoint: CompactionCheckpoint
    document: _documents_pb2.Document
    checkpoint: _checkpoints_pb2.Checkpoint
    def __init__(self, conversation: _Optional[_Union[_conversations_pb2.Conversation, _Mapping]] = ..., message: _Optional[_Union[_conversations_pb2.HistoryMessage, _Mapping]] = ..., failed_run: _Optional[_Union[_conversations_pb2.FailedRun, _Mapping]] = ..., memory_state: _Optional[_Union[_working_memory_pb2.MemoryState, _Mapping]] = ..., memory: _Optional[_Union[_memories_pb2.Memory, _Mapping]] = ..., tombstone: _Optional[_Union[_memories_pb2.MemoryTombstone, _Mapping]] = ..., candidate: _Optional[_Union[_memories_pb2.MemoryCandidate, _Mapping]] = ..., consent: _Optional[_Union[Consent, _Mapping]] = ..., memory_settings: _Optional[_Union[MemorySettings, _Mapping]] = ..., event: _Optional[_Union[Event, _Mapping]] = ..., memory_version: _Optional[_Union[_memories_pb2.Memory, _Mapping]] = ..., compaction_checkpoint: _Optional[_Union[CompactionCheckpoint, _Mapping]] = ..., document: _Optional[_Union[_documents_pb2.Document, _Mapping]] = ..., checkpoint: _Optional[_Union[_checkpoints_pb2.Checkpoint, _Mapping]] = ...) -> None: ...

class CompactionCheckpoint(_message.Message):
    __slots__ = ("conversation", "revision", "covered", "replacement", "run_id", "create_time")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    COVERED_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    conversation: str
    revision: str
    covered: int
    replacement: _containers.RepeatedCompositeFieldContainer[_conversations_pb2.HistoryMessage]
    run_id: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, conversation: _Optional[str] = ..., revision: _Optional[str] = ..., covered: _Optional[int] = ..., replacement: _Optional[_Iterable[_Union[_conversations_pb2.HistoryMessage, _Mapping]]] = ..., run_id: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExportUserDataRequest(_message.Message):
    __slots__ = ("parent",)
    PARENT_FIELD_NUMBER: _ClassVar[int]
    parent: str
    def __init__(self, parent: _Optional[str] = ...) -> None: ...

class ExportUserDataResponse(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: ExportRecord
    def __init__(self, record: _Optional[_Union[ExportRecord, _Mapping]] = ...) -> None: ...

class ImportUserDataRequest(_message.Message):
    __slots__ = ("parent", "record")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    parent: str
    record: ExportRecord
    def __init__(self, parent: _Optional[str] = ..., record: _Optional[_Union[ExportRecord, _Mapping]] = ...) -> None: ...

class ImportUserDataResponse(_message.Message):
    __slots__ = ("loaded", "change_cursor")
    class LoadedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    LOADED_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    loaded: _containers.ScalarMap[str, int]
    change_cursor: int
    def __init__(self, loaded: _Optional[_Mapping[str, int]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class DeleteUserDataRequest(_message.Message):
    __slots__ = ("parent",)
    PARENT_FIELD_NUMBER: _ClassVar[int]
    parent: str
    def __init__(self, parent: _Optional[str] = ...) -> None: ...

class DeleteUserDataResponse(_message.Message):
    __slots__ = ("deleted_rows", "delete_time", "retained_rows", "consent", "memory_settings", "change_cursor")
    class DeletedRowsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class RetainedRowsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    DELETED_ROWS_FIELD_NUMBER: _ClassVar[int]
    DELETE_TIME_FIELD_NUMBER: _ClassVar[int]
    RETAINED_ROWS_FIELD_NUMBER: _ClassVar[int]
    CONSENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    deleted_rows: _containers.ScalarMap[str, int]
    delete_time: _timestamp_pb2.Timestamp
    retained_rows: _containers.ScalarMap[str, int]
    consent: Consent
    memory_settings: MemorySettings
    change_cursor: int
    def __init__(self, deleted_rows: _Optional[_Mapping[str, int]] = ..., delete_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retained_rows: _Optional[_Mapping[str, int]] = ..., consent: _Optional[_Union[Consent, _Mapping]] = ..., memory_settings: _Optional[_Union[MemorySettings, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class UserErasure(_message.Message):
    __slots__ = ("user", "erased_by", "by_admin", "erase_time", "deleted_rows")
    class DeletedRowsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    USER_FIELD_NUMBER: _ClassVar[int]
    ERASED_BY_FIELD_NUMBER: _ClassVar[int]
    BY_ADMIN_FIELD_NUMBER: _ClassVar[int]
    ERASE_TIME_FIELD_NUMBER: _ClassVar[int]
    DELETED_ROWS_FIELD_NUMBER: _ClassVar[int]
    user: str
    erased_by: str
    by_admin: bool
    erase_time: _timestamp_pb2.Timestamp
    deleted_rows: _containers.ScalarMap[str, int]
    def __init__(self, user: _Optional[str] = ..., erased_by: _Optional[str] = ..., by_admin: _Optional[bool] = ..., erase_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deleted_rows: _Optional[_Mapping[str, int]] = ...) -> None: ...

class ListUserErasuresRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListUserErasuresResponse(_message.Message):
    __slots__ = ("erasures", "next_page_token")
    ERASURES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    erasures: _containers.RepeatedCompositeFieldContainer[UserErasure]
    next_page_token: str
    def __init__(self, erasures: _Optional[_Iterable[_Union[UserErasure, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("name", "type", "attributes", "create_time", "tenant")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: EventType
    attributes: _containers.ScalarMap[str, str]
    create_time: _timestamp_pb2.Timestamp
    tenant: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[EventType, str]] = ..., attributes: _Optional[_Mapping[str, str]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tenant: _Optional[str] = ...) -> None: ...

class ListEventsRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token", "types")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    types: _containers.RepeatedScalarFieldContainer[EventType]
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., types: _Optional[_Iterable[_Union[EventType, str]]] = ...) -> None: ...

class ListEventsResponse(_message.Message):
    __slots__ = ("events", "next_page_token")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ("parent", "types")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    parent: str
    types: _containers.RepeatedScalarFieldContainer[EventType]
    def __init__(self, parent: _Optional[str] = ..., types: _Optional[_Iterable[_Union[EventType, str]]] = ...) -> None: ...

class WatchEventsResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: Event
    def __init__(self, event: _Optional[_Union[Event, _Mapping]] = ...) -> None: ...
