import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Document(_message.Message):
    __slots__ = ("name", "namespace", "key", "value_json", "etag", "create_time", "update_time", "expire_time", "ttl", "index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: _containers.RepeatedScalarFieldContainer[str]
    key: str
    value_json: str
    etag: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    expire_time: _timestamp_pb2.Timestamp
    ttl: _duration_pb2.Duration
    index: DocumentIndex
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[_Iterable[str]] = ..., key: _Optional[str] = ..., value_json: _Optional[str] = ..., etag: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., index: _Optional[_Union[DocumentIndex, _Mapping]] = ...) -> None: ...

class DocumentIndex(_message.Message):
    __slots__ = ("texts",)
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    texts: _containers.RepeatedCompositeFieldContainer[IndexedText]
    def __init__(self, texts: _Optional[_Iterable[_Union[IndexedText, _Mapping]]] = ...) -> None: ...

class IndexedText(_message.Message):
    __slots__ = ("path", "text", "embedding")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    path: str
    text: str
    embedding: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, path: _Optional[str] = ..., text: _Optional[str] = ..., embedding: _Optional[_Iterable[float]] = ...) -> None: ...

class GetDocumentRequest(_message.Message):
    __slots__ = ("parent", "namespace", "key", "refresh_ttl")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    REFRESH_TTL_FIELD_NUMBER: _ClassVar[int]
    parent: str
    namespace: _containers.RepeatedScalarFieldContainer[str]
    key: str
    refresh_ttl: bool
    def __init__(self, parent: _Optional[str] = ..., namespace: _Optional[_Iterable[str]] = ..., key: _Optional[str] = ..., refresh_ttl: _Optional[bool] = ...) -> None: ...

class GetDocumentResponse(_message.Message):
    __slots__ = ("document",)
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    document: Document
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ...) -> None: ...

class PutDocumentRequest(_message.Message):
    __slots__ = ("parent", "document", "index", "request_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    document: Document
    index: DocumentIndex
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., document: _Optional[_Union[Document, _Mapping]] = ..., index: _Optional[_Union[DocumentIndex, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class PutDocumentResponse(_message.Message):
    __slots__ = ("document", "change_cursor")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    document: Document
    change_cursor: int
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class DeleteDocumentRequest(_message.Message):
    __slots__ = ("parent", "namespace", "key", "etag")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    parent: str
    namespace: _containers.RepeatedScalarFieldContainer[str]
    key: str
    etag: str
    def __init__(self, parent: _Optional[str] = ..., namespace: _Optional[_Iterable[str]] = ..., key: _Optional[str] = ..., etag: _Optional[str] = ...) -> None: ...

class DeleteDocumentResponse(_message.Message):
    __slots__ = ("deleted", "change_cursor")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    change_cursor: int
    def __init__(self, deleted: _Optional[bool] = ..., change_cursor: _Optional[int] = ...) -> None: ...

class DocumentFilter(_message.Message):
    __slots__ = ("field", "operator", "value_json")
    class Operator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        OPERATOR_UNSPECIFIED: _ClassVar[DocumentFilter.Operator]
        OPERATOR_EQ: _ClassVar[DocumentFilter.Operator]
        OPERATOR_NE: _ClassVar[DocumentFilter.Operator]
        OPERATOR_GT: _ClassVar[DocumentFilter.Operator]
        OPERATOR_GTE: _ClassVar[DocumentFilter.Operator]
        OPERATOR_LT: _ClassVar[DocumentFilter.Operator]
        OPERATOR_LTE: _ClassVar[DocumentFilter.Operator]
    OPERATOR_UNSPECIFIED: DocumentFilter.Operator
    OPERATOR_EQ: DocumentFilter.Operator
    OPERATOR_NE: DocumentFilter.Operator
    OPERATOR_GT: DocumentFilter.Operator
    OPERATOR_GTE: DocumentFilter.Operator
    OPERATOR_LT: DocumentFilter.Operator
    OPERATOR_LTE: DocumentFilter.Operator
    FIELD_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    field: str
    operator: DocumentFilter.Operator
    value_json: str
    def __init__(self, field: _Optional[str] = ..., operator: _Optional[_Union[DocumentFilter.Operator, str]] = ..., value_json: _Optional[str] = ...) -> None: ...

class SearchDocumentsRequest(_message.Message):
    __slots__ = ("parent", "namespace_prefix", "filters", "query", "query_embedding", "offset", "limit", "refresh_ttl")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_PREFIX_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    QUERY_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REFRESH_TTL_FIELD_NUMBER: _ClassVar[int]
    parent: str
    namespace_prefix: _containers.RepeatedScalarFieldContainer[str]
    filters: _containers.RepeatedCompositeFieldContainer[DocumentFilter]
    query: str
    query_embedding: _containers.RepeatedScalarFieldContainer[float]
    offset: int
    limit: int
    refresh_ttl: bool
    def __init__(self, parent: _Optional[str] = ..., namespace_prefix: _Optional[_Iterable[str]] = ..., filters: _Optional[_Iterable[_Union[DocumentFilter, _Mapping]]] = ..., query: _Optional[str] = ..., query_embedding: _Optional[_Iterable[float]] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ..., refresh_ttl: _Optional[bool] = ...) -> None: ...

class ScoredDocument(_message.Message):
    __slots__ = ("document", "score")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    document: Document
    score: float
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., score: _Optional[float] = ...) -> None: ...

class SearchDocumentsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ScoredDocument]
    def __init__(self, results: _Optional[_Iterable[_Union[ScoredDocument, _Mapping]]] = ...) -> None: ...

class NamespaceCondition(_message.Message):
    __slots__ = ("side", "labels")
    class Side(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SIDE_UNSPECIFIED: _ClassVar[NamespaceCondition.Side]
        SIDE_PREFIX: _ClassVar[NamespaceCondition.Side]
        SIDE_SUFFIX: _ClassVar[NamespaceCondition.Side]
    SIDE_UNSPECIFIED: NamespaceCondition.Side
    SIDE_PREFIX: NamespaceCondition.Side
    SIDE_SUFFIX: NamespaceCondition.Side
    SIDE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    side: NamespaceCondition.Side
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, side: _Optional[_Union[NamespaceCondition.Side, str]] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class ListDocumentNamespacesRequest(_message.Message):
    __slots__ = ("parent", "conditions", "max_depth", "offset", "limit")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_DEPTH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    parent: str
    conditions: _containers.RepeatedCompositeFieldContainer[NamespaceCondition]
    max_depth: int
    offset: int
    limit: int
    def __init__(self, parent: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[NamespaceCondition, _Mapping]]] = ..., max_depth: _Optional[int] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class DocumentNamespace(_message.Message):
    __slots__ = ("labels",)
    LABELS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, labels: _Optional[_Iterable[str]] = ...) -> None: ...

class ListDocumentNamespacesResponse(_message.Message):
    __slots__ = ("namespaces",)
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[DocumentNamespace]
    def __init__(self, namespaces: _Optional[_Iterable[_Union[DocumentNamespace, _Mapping]]] = ...) -> None: ...
