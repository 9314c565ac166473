"""The Mnemo Python client: a typed facade over the generated ``mnemo.v1`` stubs.

::

    from mnemo.client import MnemoClient

    with MnemoClient("127.0.0.1:50051") as mnemo:
        state, evicted = mnemo.remember_exchange("u1", ask="Hi?", answer="Hello!")

``AsyncMnemoClient`` is the asyncio twin. Failed calls raise ``MnemoError``
subclasses (``mnemo.client.errors``). Methods return the generated messages
re-exported here (``MemoryState``, ``Conversation``, ``HistoryMessage``, ``Memory``, ...).
"""

from mnemo.client._agent_state import app_state_value
from mnemo.client._async import AsyncMnemoClient
from mnemo.client._calls import Page
from mnemo.client._candidates import CandidateLike
from mnemo.client._channel_options import service_config
from mnemo.client._client_base import DEFAULT_TARGET, DEFAULT_TIMEOUT, parse_target
from mnemo.client._documents import IndexedTextLike, document_value
from mnemo.client._follow import AsyncChangeFollower, ChangeFollower
from mnemo.client._governance import ConsentStateName, EventTypeName
from mnemo.client._history import MessageLike, Snapshot
from mnemo.client._memories import EmbeddingLike
from mnemo.client._memory_batch import MAX_BATCH_ENTRIES, MemoryLike
from mnemo.client._sync import MnemoClient
from mnemo.client._working_memory import ExchangeLike, Remembered
from mnemo.client.errors import (
    AbortedError,
    AlreadyExistsError,
    CallCancelledError,
    DataLossError,
    DeadlineExceededError,
    EtagMismatchError,
    FailedPreconditionError,
    FieldViolation,
    HistoryCompactedError,
    InternalError,
    InvalidArgumentError,
    MnemoError,
    NotFoundError,
    OutOfRangeError,
    PermissionDeniedError,
    PositionMismatchError,
    RequestIdReusedError,
    ResourceExhaustedError,
    RevisionStaleError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    UnknownError,
)
from mnemo.v1.conversations_pb2 import (
    AppendMessagesResponse,
    Conversation,
    FailedRun,
    HistoryMessage,
    PopMessagesResponse,
    RunError,
)
from mnemo.v1.documents_pb2 import Document, ScoredDocument
from mnemo.v1.governance_pb2 import (
    Consent,
    DeleteUserDataResponse,
    Event,
    ExportRecord,
    MemorySettings,
    SetConsentResponse,
)
from mnemo.v1.memories_pb2 import (
    ApproveMemoryCandidateResponse,
    BatchCreateMemoriesResponse,
    BuildContextResponse,
    CreateMemoryResponse,
    Embedding,
    ExtractMemoriesResponse,
    Memory,
    MemoryCandidate,
    MemoryTombstone,
    RecallMemoriesResponse,
)
from mnemo.v1.sync_pb2 import Change, Heartbeat, ListChangesResponse, WatchChangesResponse
from mnemo.v1.working_memory_pb2 import Exchange, MemoryState

__all__ = [
    "app_state_value",
    "document_value",
    "parse_target",
    "service_config",
    "AbortedError",
    "AlreadyExistsError",
    "AppendMessagesResponse",
    "ApproveMemoryCandidateResponse",
    "AsyncChangeFollower",
    "AsyncMnemoClient",
    "BatchCreateMemoriesResponse",
    "BuildContextResponse",
    "CallCancelledError",
    "CandidateLike",
    "Change",
    "ChangeFollower",
    "Consent",
    "ConsentStateName",
    "Conversation",
    "CreateMemoryResponse",
    "DEFAULT_TARGET",
    "DEFAULT_TIMEOUT",
    "DataLossError",
    "DeadlineExceededError",
    "DeleteUserDataResponse",
    "Document",
    "Embedding",
    "EmbeddingLike",
    "EtagMismatchError",
    "Event",
    "EventTypeName",
    "Exchange",
    "ExchangeLike",
    "ExportRecord",
    "ExtractMemoriesResponse",
    "FailedPreconditionError",
    "FailedRun",
    "FieldViolation",
    "Heartbeat",
    "HistoryCompactedError",
    "HistoryMessage",
    "IndexedTextLike",
    "InternalError",
    "InvalidArgumentError",
    "ListChangesResponse",
    "MAX_BATCH_ENTRIES",
    "Memory",
    "MemoryCandidate",
    "MemoryLike",
    "MemorySettings",
    "MemoryState",
    "MemoryTombstone",
    "MessageLike",
    "MnemoClient",
    "MnemoError",
    "NotFoundError",
    "OutOfRangeError",
    "Page",
    "PermissionDeniedError",
    "PopMessagesResponse",
    "PositionMismatchError",
    "RecallMemoriesResponse",
    "Remembered",
    "RequestIdReusedError",
    "ResourceExhaustedError",
    "RevisionStaleError",
    "RunError",
    "ScoredDocument",
    "SetConsentResponse",
    "Snapshot",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "UnknownError",
    "WatchChangesResponse",
]
