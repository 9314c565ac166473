import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PruneStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRUNE_STRATEGY_UNSPECIFIED: _ClassVar[PruneStrategy]
    PRUNE_STRATEGY_KEEP_LATEST: _ClassVar[PruneStrategy]
    PRUNE_STRATEGY_DELETE: _ClassVar[PruneStrategy]
PRUNE_STRATEGY_UNSPECIFIED: PruneStrategy
PRUNE_STRATEGY_KEEP_LATEST: PruneStrategy
PRUNE_STRATEGY_DELETE: PruneStrategy

class Checkpoint(_message.Message):
    __slots__ = ("thread_name", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint", "metadata_json", "pending_writes", "create_time")
    THREAD_NAME_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_NS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    PENDING_WRITES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    thread_name: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str
    type: str
    checkpoint: bytes
    metadata_json: str
    pending_writes: _containers.RepeatedCompositeFieldContainer[PendingWrite]
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, thread_name: _Optional[str] = ..., checkpoint_ns: _Optional[str] = ..., checkpoint_id: _Optional[str] = ..., parent_checkpoint_id: _Optional[str] = ..., type: _Optional[str] = ..., checkpoint: _Optional[bytes] = ..., metadata_json: _Optional[str] = ..., pending_writes: _Optional[_Iterable[_Union[PendingWrite, _Mapping]]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PendingWrite(_message.Message):
    __slots__ = ("task_id", "idx", "channel", "type", "value", "task_path")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    IDX_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TASK_PATH_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    idx: int
    channel: str
    type: str
    value: bytes
    task_path: str
    def __init__(self, task_id: _Optional[str] = ..., idx: _Optional[int] = ..., channel: _Optional[str] = ..., type: _Optional[str] = ..., value: _Optional[bytes] = ..., task_path: _Optional[str] = ...) -> None: ...

class PutCheckpointRequest(_message.Message):
    __slots__ = ("checkpoint",)
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    checkpoint: Checkpoint
    def __init__(self, checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...

class PutCheckpointResponse(_message.Message):
    __slots__ = ("checkpoint", "change_cursor")
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    checkpoint: Checkpoint
    change_cursor: int
    def __init__(self, checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class PutCheckpointWritesRequest(_message.Message):
    __slots__ = ("parent", "checkpoint_ns", "checkpoint_id", "writes")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_NS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    parent: str
    checkpoint_ns: str
    checkpoint_id: str
    writes: _containers.RepeatedCompositeFieldContainer[PendingWrite]
    def __init__(self, parent: _Optional[str] = ..., checkpoint_ns: _Optional[str] = ..., checkpoint_id: _Optional[str] = ..., writes: _Optional[_Iterable[_Union[PendingWrite, _Mapping]]] = ...) -> None: ...

class PutCheckpointWritesResponse(_message.Message):
    __slots__ = ("written_count", "change_cursor")
    WRITTEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    written_count: int
    change_cursor: int
    def __init__(self, written_count: _Optional[int] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class GetCheckpointRequest(_message.Message):
    __slots__ = ("parent", "checkpoint_ns", "checkpoint_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_NS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    checkpoint_ns: str
    checkpoint_id: str
    def __init__(self, parent: _Optional[str] = ..., checkpoint_ns: _Optional[str] = ..., checkpoint_id: _Optional[str] = ...) -> None: ...

class GetCheckpointResponse(_message.Message):
    __slots__ = ("checkpoint",)
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    checkpoint: Checkpoint
    def __init__(self, checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...

class ListCheckpointsRequest(_message.Message):
    __slots__ = ("parent", "checkpoint_ns", "metadata_filter", "before_checkpoint_id", "page_size")
    class MetadataFilterEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_NS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FILTER_FIELD_NUMBER: _ClassVar[int]
    BEFORE_CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    parent: str
    checkpoint_ns: str
    metadata_filter: _containers.ScalarMap[str, str]
    before_checkpoint_id: str
    page_size: int
    def __init__(self, parent: _Optional[str] = ..., checkpoint_ns: _Optional[str] = ..., metadata_filter: _Optional[_Mapping[str, str]] = ..., before_checkpoint_id: _Optional[str] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListCheckpointsResponse(_message.Message):
    __slots__ = ("checkpoints", "next_before_checkpoint_id")
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_BEFORE_CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[Checkpoint]
    next_before_checkpoint_id: str
    def __init__(self, checkpoints: _Optional[_Iterable[_Union[Checkpoint, _Mapping]]] = ..., next_before_checkpoint_id: _Optional[str] = ...) -> None: ...

class DeleteThreadRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteThreadResponse(_message.Message):
    __slots__ = ("deleted_count", "change_cursor")
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    change_cursor: int
    def __init__(self, deleted_count: _Optional[int] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class CopyThreadRequest(_message.Message):
    __slots__ = ("name", "target_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    target_name: str
    def __init__(self, name: _Optional[str] = ..., target_name: _Optional[str] = ...) -> None: ...

class CopyThreadResponse(_message.Message):
    __slots__ = ("copied_count", "change_cursor")
    COPIED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    copied_count: int
    change_cursor: int
    def __init__(self, copied_count: _Optional[int] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class PruneThreadsRequest(_message.Message):
    __slots__ = ("parent", "thread_ids", "strategy")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    THREAD_IDS_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    parent: str
    thread_ids: _containers.RepeatedScalarFieldContainer[str]
    strategy: PruneStrategy
    def __init__(self, parent: _Optional[str] = ..., thread_ids: _Optional[_Iterable[str]] = ..., strategy: _Optional[_Union[PruneStrategy, str]] = ...) -> None: ...

class PruneThreadsResponse(_message.Message):
    __slots__ = ("deleted_count", "change_cursor")
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    change_cursor: int
    def __init__(self, deleted_count: _Optional[int] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class DeleteCheckpointsForRunsRequest(_message.Message):
    __slots__ = ("parent", "run_ids")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    parent: str
    run_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, parent: _Optional[str] = ..., run_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteCheckpointsForRunsResponse(_message.Message):
    __slots__ = ("deleted_count", "change_cursor")
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    change_cursor: int
    def __init__(self, deleted_count: _Optional[int] = ..., change_cursor: _Optional[int] = ...) -> None: ...
