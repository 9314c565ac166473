import datetime

from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from mnemo.v1 import conversations_pb2 as _conversations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_SCOPE_UNSPECIFIED: _ClassVar[MemoryScope]
    MEMORY_SCOPE_IDENTITY: _ClassVar[MemoryScope]
    MEMORY_SCOPE_CONVERSATION: _ClassVar[MemoryScope]

class MemorySource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_SOURCE_UNSPECIFIED: _ClassVar[MemorySource]
    MEMORY_SOURCE_TOOL_CALL: _ClassVar[MemorySource]
    MEMORY_SOURCE_EXTRACTOR: _ClassVar[MemorySource]
    MEMORY_SOURCE_USER: _ClassVar[MemorySource]
    MEMORY_SOURCE_IMPORT: _ClassVar[MemorySource]

class SaveOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SAVE_OUTCOME_UNSPECIFIED: _ClassVar[SaveOutcome]
    SAVE_OUTCOME_CREATED: _ClassVar[SaveOutcome]
    SAVE_OUTCOME_HISTORICAL: _ClassVar[SaveOutcome]
    SAVE_OUTCOME_DUPLICATE: _ClassVar[SaveOutcome]

class RecallScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECALL_SCOPE_UNSPECIFIED: _ClassVar[RecallScope]
    RECALL_SCOPE_IDENTITY: _ClassVar[RecallScope]
    RECALL_SCOPE_CONVERSATION: _ClassVar[RecallScope]

class RecallSignal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECALL_SIGNAL_UNSPECIFIED: _ClassVar[RecallSignal]
    RECALL_SIGNAL_LEXICAL: _ClassVar[RecallSignal]
    RECALL_SIGNAL_SEMANTIC: _ClassVar[RecallSignal]
    RECALL_SIGNAL_CONVERSATION_SCOPE: _ClassVar[RecallSignal]
    RECALL_SIGNAL_PINNED: _ClassVar[RecallSignal]

class CandidateState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CANDIDATE_STATE_UNSPECIFIED: _ClassVar[CandidateState]
    CANDIDATE_STATE_PENDING: _ClassVar[CandidateState]
    CANDIDATE_STATE_APPROVED: _ClassVar[CandidateState]
    CANDIDATE_STATE_REJECTED: _ClassVar[CandidateState]
    CANDIDATE_STATE_CANCELLED: _ClassVar[CandidateState]
MEMORY_SCOPE_UNSPECIFIED: MemoryScope
MEMORY_SCOPE_IDENTITY: MemoryScope
MEMORY_SCOPE_CONVERSATION: MemoryScope
MEMORY_SOURCE_UNSPECIFIED: MemorySource
MEMORY_SOURCE_TOOL_CALL: MemorySource
MEMORY_SOURCE_EXTRACTOR: MemorySource
MEMORY_SOURCE_USER: MemorySource
MEMORY_SOURCE_IMPORT: MemorySource
SAVE_OUTCOME_UNSPECIFIED: SaveOutcome
SAVE_OUTCOME_CREATED: SaveOutcome
SAVE_OUTCOME_HISTORICAL: SaveOutcome
SAVE_OUTCOME_DUPLICATE: SaveOutcome
RECALL_SCOPE_UNSPECIFIED: RecallScope
RECALL_SCOPE_IDENTITY: RecallScope
RECALL_SCOPE_CONVERSATION: RecallScope
RECALL_SIGNAL_UNSPECIFIED: RecallSignal
RECALL_SIGNAL_LEXICAL: RecallSignal
RECALL_SIGNAL_SEMANTIC: RecallSignal
RECALL_SIGNAL_CONVERSATION_SCOPE: RecallSignal
RECALL_SIGNAL_PINNED: RecallSignal
CANDIDATE_STATE_UNSPECIFIED: CandidateState
CANDIDATE_STATE_PENDING: CandidateState
CANDIDATE_STATE_APPROVED: CandidateState
CANDIDATE_STATE_REJECTED: CandidateState
CANDIDATE_STATE_CANCELLED: CandidateState

class Embedding(_message.Message):
    __slots__ = ("model", "values")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    model: str
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, model: _Optional[str] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("name", "text", "key", "scope", "conversation", "source", "metadata", "pinned", "create_time", "update_time", "archive_time", "etag", "embedding", "event_time", "valid_until")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_TIME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_FIELD_NUMBER: _ClassVar[int]
    VALID_UNTIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    text: str
    key: str
    scope: MemoryScope
    conversation: str
    source: MemorySource
    metadata: _containers.ScalarMap[str, str]
    pinned: bool
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    archive_time: _timestamp_pb2.Timestamp
    etag: str
    embedding: Embedding
    event_time: _timestamp_pb2.Timestamp
    valid_until: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., text: _Optional[str] = ..., key: _Optional[str] = ..., scope: _Optional[_Union[MemoryScope, str]] = ..., conversation: _Optional[str] = ..., source: _Optional[_Union[MemorySource, str]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., pinned: _Optional[bool] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., archive_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., etag: _Optional[str] = ..., embedding: _Optional[_Union[Embedding, _Mapping]] = ..., event_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MemoryTombstone(_message.Message):
    __slots__ = ("name", "key", "delete_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    DELETE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    key: str
    delete_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., key: _Optional[str] = ..., delete_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateMemoryRequest(_message.Message):
    __slots__ = ("parent", "memory", "memory_id", "request_id", "origin_conversation", "near_duplicates")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    NEAR_DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    parent: str
    memory: Memory
    memory_id: str
    request_id: str
    origin_conversation: str
    near_duplicates: bool
    def __init__(self, parent: _Optional[str] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., memory_id: _Optional[str] = ..., request_id: _Optional[str] = ..., origin_conversation: _Optional[str] = ..., near_duplicates: _Optional[bool] = ...) -> None: ...

class CreateMemoryResponse(_message.Message):
    __slots__ = ("memory", "archived", "outcome", "change_cursor")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    archived: _containers.RepeatedScalarFieldContainer[str]
    outcome: SaveOutcome
    change_cursor: int
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., archived: _Optional[_Iterable[str]] = ..., outcome: _Optional[_Union[SaveOutcome, str]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class BatchCreateMemoriesRequest(_message.Message):
    __slots__ = ("parent", "requests", "request_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    requests: _containers.RepeatedCompositeFieldContainer[CreateMemoryRequest]
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., requests: _Optional[_Iterable[_Union[CreateMemoryRequest, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class BatchCreateMemoriesResponse(_message.Message):
    __slots__ = ("memories", "outcomes", "archived", "change_cursor")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    outcomes: _containers.RepeatedScalarFieldContainer[SaveOutcome]
    archived: _containers.RepeatedScalarFieldContainer[str]
    change_cursor: int
    def __init__(self, memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., outcomes: _Optional[_Iterable[_Union[SaveOutcome, str]]] = ..., archived: _Optional[_Iterable[str]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class GetMemoryRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetMemoryResponse(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ...) -> None: ...

class ListMemoriesRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token", "scope", "conversation", "include_archived", "key", "event_time_after", "event_time_before", "as_of")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_AFTER_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_BEFORE_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    scope: MemoryScope
    conversation: str
    include_archived: bool
    key: str
    event_time_after: _timestamp_pb2.Timestamp
    event_time_before: _timestamp_pb2.Timestamp
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., scope: _Optional[_Union[MemoryScope, str]] = ..., conversation: _Optional[str] = ..., include_archived: _Optional[bool] = ..., key: _Optional[str] = ..., event_time_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., event_time_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListMemoriesResponse(_message.Message):
    __slots__ = ("memories", "next_page_token")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    next_page_token: str
    def __init__(self, memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class UpdateMemoryRequest(_message.Message):
    __slots__ = ("memory", "update_mask", "origin_conversation")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    update_mask: _field_mask_pb2.FieldMask
    origin_conversation: str
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., origin_conversation: _Optional[str] = ...) -> None: ...

class UpdateMemoryResponse(_message.Message):
    __slots__ = ("memory", "change_cursor")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    change_cursor: int
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class DeleteMemoryRequest(_message.Message):
    __slots__ = ("name", "etag", "origin_conversation")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    etag: str
    origin_conversation: str
    def __init__(self, name: _Optional[str] = ..., etag: _Optional[str] = ..., origin_conversation: _Optional[str] = ...) -> None: ...

class DeleteMemoryResponse(_message.Message):
    __slots__ = ("tombstone", "change_cursor")
    TOMBSTONE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    tombstone: MemoryTombstone
    change_cursor: int
    def __init__(self, tombstone: _Optional[_Union[MemoryTombstone, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class ListMemoryVersionsRequest(_message.Message):
    __slots__ = ("name", "page_size", "page_token")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    page_size: int
    page_token: str
    def __init__(self, name: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListMemoryVersionsResponse(_message.Message):
    __slots__ = ("versions", "next_page_token")
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[Memory]
    next_page_token: str
    def __init__(self, versions: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RecallMemoriesRequest(_message.Message):
    __slots__ = ("parent", "query", "conversation", "scope", "max_results", "min_score", "semantic", "query_embedding", "as_of", "event_time_after", "event_time_before")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    MAX_RESULTS_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_FIELD_NUMBER: _ClassVar[int]
    QUERY_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_AFTER_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_BEFORE_FIELD_NUMBER: _ClassVar[int]
    parent: str
    query: str
    conversation: str
    scope: RecallScope
    max_results: int
    min_score: float
    semantic: bool
    query_embedding: Embedding
    as_of: _timestamp_pb2.Timestamp
    event_time_after: _timestamp_pb2.Timestamp
    event_time_before: _timestamp_pb2.Timestamp
    def __init__(self, parent: _Optional[str] = ..., query: _Optional[str] = ..., conversation: _Optional[str] = ..., scope: _Optional[_Union[RecallScope, str]] = ..., max_results: _Optional[int] = ..., min_score: _Optional[float] = ..., semantic: _Optional[bool] = ..., query_embedding: _Optional[_Union[Embedding, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., event_time_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., event_time_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RecallMemoriesResponse(_message.Message):
    __slots__ = ("memory", "score", "rank", "signals")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    score: float
    rank: int
    signals: _containers.RepeatedScalarFieldContainer[RecallSignal]
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., score: _Optional[float] = ..., rank: _Optional[int] = ..., signals: _Optional[_Iterable[_Union[RecallSignal, str]]] = ...) -> None: ...

class BuildContextRequest(_message.Message):
    __slots__ = ("parent", "query", "conversation", "max_entries", "max_bytes", "semantic", "query_embedding", "as_of", "event_time_after", "event_time_before", "min_score")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_FIELD_NUMBER: _ClassVar[int]
    QUERY_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_AFTER_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_BEFORE_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    parent: str
    query: str
    conversation: str
    max_entries: int
    max_bytes: int
    semantic: bool
    query_embedding: Embedding
    as_of: _timestamp_pb2.Timestamp
    event_time_after: _timestamp_pb2.Timestamp
    event_time_before: _timestamp_pb2.Timestamp
    min_score: float
    def __init__(self, parent: _Optional[str] = ..., query: _Optional[str] = ..., conversation: _Optional[str] = ..., max_entries: _Optional[int] = ..., max_bytes: _Optional[int] = ..., semantic: _Optional[bool] = ..., query_embedding: _Optional[_Union[Embedding, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., event_time_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., event_time_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., min_score: _Optional[float] = ...) -> None: ...

class BuildContextResponse(_message.Message):
    __slots__ = ("system_message", "memories", "used_bytes")
    SYSTEM_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    system_message: str
    memories: _containers.RepeatedScalarFieldContainer[str]
    used_bytes: int
    def __init__(self, system_message: _Optional[str] = ..., memories: _Optional[_Iterable[str]] = ..., used_bytes: _Optional[int] = ...) -> None: ...

class MemoryCandidate(_message.Message):
    __slots__ = ("name", "memory", "state", "conversation", "run_id", "turn", "extractor", "create_time", "saved_memory")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    EXTRACTOR_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SAVED_MEMORY_FIELD_NUMBER: _ClassVar[int]
    name: str
    memory: Memory
    state: CandidateState
    conversation: str
    run_id: str
    turn: int
    extractor: str
    create_time: _timestamp_pb2.Timestamp
    saved_memory: str
    def __init__(self, name: _Optional[str] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., state: _Optional[_Union[CandidateState, str]] = ..., conversation: _Optional[str] = ..., run_id: _Optional[str] = ..., turn: _Optional[int] = ..., extractor: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., saved_memory: _Optional[str] = ...) -> None: ...

class ExtractMemoriesRequest(_message.Message):
    __slots__ = ("parent", "conversation", "messages", "run_id", "turn", "require_approval", "request_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    conversation: str
    messages: _containers.RepeatedCompositeFieldContainer[_conversations_pb2.HistoryMessage]
    run_id: str
    turn: int
    require_approval: bool
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., conversation: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[_conversations_pb2.HistoryMessage, _Mapping]]] = ..., run_id: _Optional[str] = ..., turn: _Optional[int] = ..., require_approval: _Optional[bool] = ..., request_id: _Optional[str] = ...) -> None: ...

class ExtractMemoriesResponse(_message.Message):
    __slots__ = ("candidates", "memories", "change_cursor")
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    candidates: _containers.RepeatedCompositeFieldContainer[MemoryCandidate]
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    change_cursor: int
    def __init__(self, candidates: _Optional[_Iterable[_Union[MemoryCandidate, _Mapping]]] = ..., memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class ProposeMemoryCandidatesRequest(_message.Message):
    __slots__ = ("parent", "candidates", "request_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    candidates: _containers.RepeatedCompositeFieldContainer[MemoryCandidate]
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., candidates: _Optional[_Iterable[_Union[MemoryCandidate, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class ProposeMemoryCandidatesResponse(_message.Message):
    __slots__ = ("candidates", "change_cursor")
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    candidates: _containers.RepeatedCompositeFieldContainer[MemoryCandidate]
    change_cursor: int
    def __init__(self, candidates: _Optional[_Iterable[_Union[MemoryCandidate, _Mapping]]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class ListMemoryCandidatesRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token", "include_resolved")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_RESOLVED_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    include_resolved: bool
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., include_resolved: _Optional[bool] = ...) -> None: ...

class ListMemoryCandidatesResponse(_message.Message):
    __slots__ = ("candidates", "next_page_token")
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    candidates: _containers.RepeatedCompositeFieldContainer[MemoryCandidate]
    next_page_token: str
    def __init__(self, candidates: _Optional[_Iterable[_Union[MemoryCandidate, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ApproveMemoryCandidateRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ApproveMemoryCandidateResponse(_message.Message):
    __slots__ = ("memory", "candidate", "change_cursor")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    candidate: MemoryCandidate
    change_cursor: int
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., candidate: _Optional[_Union[MemoryCandidate, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class RejectMemoryCandidateRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RejectMemoryCandidateResponse(_message.Message):
    __slots__ = ("candidate", "change_cursor")
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    candidate: MemoryCandidate
    change_cursor: int
    def __init__(self, candidate: _Optional[_Union[MemoryCandidate, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...
