"""The writes of the storage suite: each helper builds one command
(``domain.commands``) and has the store execute it.

The helpers answer the command's result (``Written.value``); the
``*_written`` variants answer the whole ``Written`` where a test needs the
change cursor. ``caller`` is ``None`` (``--auth none``) unless a test passes
one; ``expected_etag=None`` is unconditional.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ParamSpec, TypeVar

from mnemo_server.domain.commands import Command, Written
from mnemo_server.domain.commands.conversations import (
    AppendMessages,
    ClearMessages,
    CreateConversation,
    DeleteConversation,
    PopMessages,
    PopResult,
    RecordFailedRun,
    ReplaceHistoryPrefix,
    UpdateConversation,
)
from mnemo_server.domain.commands.governance import (
    DeleteUserData,
    ImportUserData,
    SetConsent,
    UpdateMemorySettings,
)
from mnemo_server.domain.commands.memories import (
    ApproveCandidate,
    CreateMemories,
    DeleteMemory,
    ProposeCandidates,
    RejectCandidate,
    UpdateMemory,
)
from mnemo_server.domain.commands.working_memory import (
    ClearMemoryState,
    RememberExchange,
    SaveMemoryState,
)
from mnemo_server.domain.governance import ConsentChange, ConsentState, MemorySettings
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import (
    CandidateDraft,
    Memory,
    MemoryCandidate,
    MemoryChange,
    MemoryDraft,
    MemoryTombstone,
    SavedMemory,
)
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    Exchange,
    FailedRun,
    HistorySnapshot,
    Idempotency,
    JsonObject,
    MemoryState,
    NewMessage,
    RememberResult,
    RunError,
)
from mnemo_server.domain.ports import CommandStore, UserDataStore
from mnemo_server.domain.user_data import ErasureReceipt, UserData

P = ParamSpec("P")
R = TypeVar("R")


async def run(store: CommandStore, command: Command[R]) -> R:
    """``command`` executed by ``store``: its result."""
    return (await store.execute(command)).value


def _value_of(written: Callable[P, Awaitable[Written[R]]]) -> Callable[P, Awaitable[R]]:
    """The helper that answers only the result of what ``written`` answers."""

    async def value(*args: P.args, **kwargs: P.kwargs) -> R:
        return (await written(*args, **kwargs)).value

    value.__name__ = written.__name__.removesuffix("_written")
    return value


# ----------------------------------------------------------- working memory


async def save_state_written(
    store: CommandStore,
    key: ConversationKey,
    summary: str,
    recent: Sequence[Exchange] = (),
    *,
    expected_etag: str | None = None,
    caller: Caller | None = None,
) -> Written[MemoryState]:
    return await store.execute(
        SaveMemoryState(
            caller=caller,
            user_id=key.user_id,
            conversation_id=key.conversation_id,
            summary=summary,
            recent=tuple(recent),
            expected_etag=expected_etag,
        )
    )


save_state = _value_of(save_state_written)


async def remember(
    store: CommandStore,
    key: ConversationKey,
    exchange: Exchange,
    *,
    keep_recent: int,
    summary: str | None = None,
    expected_etag: str | None = None,
    idempotency: Idempotency | None = None,
    caller: Caller | None = None,
) -> RememberResult:
    return await run(
        store,
        RememberExchange(
            caller=caller,
            user_id=key.user_id,
            conversation_id=key.conversation_id,
            exchange=exchange,
            keep_recent=keep_recent,
            summary=summary,
            expected_etag=expected_etag,
            idempotency=idempotency,
        ),
    )


async def clear_state(
    store: CommandStore,
    key: ConversationKey,
    *,
    expected_etag: str | None = None,
    caller: Caller | None = None,
) -> MemoryState:
    return await run(
        store,
        ClearMemoryState(
            caller=caller,
            user_id=key.user_id,
            conversation_id=key.conversation_id,
            expected_etag=expected_etag,
        ),
    )


# ------------------------------------------------------------ conversations


async def create_conversation(
    store: CommandStore,
    user_id: str,
    conversation_id: str,
    *,
    metadata: JsonObject | None = None,
    temporary: bool = False,
    lifetime_micros: int | None = None,
    idempotency: Idempotency | None = None,
    caller: Caller | None = None,
) -> Conversation:
    return await run(
        store,
        CreateConversation(
            caller=caller,
            user_id=user_id,
            conversation_id=conversation_id,
            metadata={} if metadata is None else metadata,
            temporary=temporary,
            lifetime_micros=lifetime_micros,
            idempotency=idempotency,
        ),
    )


async def update_conversation(
    store: CommandStore,
    user_id: str,
    conversation_id: str,
    metadata: JsonObject,
    *,
    expected_etag: str | None = None,
    caller: Caller | None = None,
) -> Conversation:
    return await run(
        store,
        UpdateConversation(
            caller=caller,
            user_id=user_id,
            conversation_id=conversation_id,
            metadata=metadata,
            expected_etag=expected_etag,
        ),
    )


async def delete_conversation(
    store: CommandStore,
    user_id: str,
    conversation_id: str,
    *,
    expected_etag: str | None = None,
    caller: Caller | None = None,
) -> None:
    await run(
        store,
        DeleteConversation(
            caller=caller,
            user_id=user_id,
            conversation_id=conversation_id,
            expected_etag=expected_etag,
        ),
    )


async def append_messages_written(
    store: CommandStore,
    user_id: str,
    conversation_id: str,
    new: Sequence[NewMessage],
    *,
    run_id: str = "",
    turn: int = 0,
    expected_position: int | None = None,
    create_metadata: JsonObject | None = None,
    idempotency: Idempotency | None = None,
    caller: Caller | None = None,
) -> Written[AppendResult]:
    return await store.execute(
        AppendMessages(
            caller=caller,
            user_id=user_id,
            conversation_id=conversation_id,
            messages=tuple(new),
            run_id=run_id,
            turn=turn,
            expected_position=expected_position,
            create_metadata={} if create_metadata is None else create_metadata,
            idempotency=idempotency,
        )
    )


append_messages = _value_of(append_messages_written)


async def clear_messages(
    store: CommandStore, user_id: str, conversation_id: str, *, caller: Caller | None = None
) -> Conversation:
    return await run(
        store, ClearMessages(caller=caller, user_id=user_id, conversation_id=conversation_id)
    )


async def pop_messages(
    store: CommandStore,
    user_id: str,
    conversation_id: str,
    count: int,
    *,
    expected_next_position: int | None = None,
    idempotency: Idempotency | None = None,
) -> PopResult:
    return await run(
        store,
        PopMessages(
            caller=None,
            user_id=user_id,
            conversation_id=conversation_id,
            count=count,
            expected_next_position=expected_next_position,
            idempotency=idempotency,
        ),
    )


async def record_failed_run(
    store: CommandStore,
    user_id: str,
    conversation_id: str,
    *,
    run_id: str,
    error: RunError,
    messages: Sequence[NewMessage] = (),
    idempotency: Idempotency | None = None,
    caller: Caller | None = None,
) -> FailedRun:
    return await run(
        store,
        RecordFailedRun(
            caller=caller,
            user_id=user_id,
            conversation_id=conversation_id,
            run_id=run_id,
            error=error,
            messages=tuple(messages),
            idempotency=idempotency,
        ),
    )


async def replace_history_prefix(
    store: CommandStore,
    user_id: str,
    conversation_id: str,
    *,
    revision: str,
    message_count: int,
    replacement: Sequence[NewMessage] = (),
    run_id: str = "",
    idempotency: Idempotency | None = None,
    caller: Caller | None = None,
) -> HistorySnapshot:
    return await run(
        store,
        ReplaceHistoryPrefix(
            caller=caller,
            user_id=user_id,
            conversation_id=conversation_id,
            revision=revision,
            message_count=message_count,
            replacement=tuple(replacement),
            run_id=run_id,
            idempotency=idempotency,
        ),
    )


# ------------------------------------------------------------------ memories


async def create_memories(
    store: CommandStore,
    user_id: str,
    drafts: Sequence[tuple[str, MemoryDraft]],
    *,
    idempotency: Idempotency | None = None,
    origin_conversation_ids: tuple[str, ...] = (),
    caller: Caller | None = None,
) -> tuple[SavedMemory, ...]:
    return await run(
        store,
        CreateMemories(
            caller=caller,
            user_id=user_id,
            drafts=tuple(drafts),
            origin_conversation_ids=origin_conversation_ids,
            idempotency=idempotency,
        ),
    )


async def update_memory(
    store: CommandStore,
    user_id: str,
    memory_id: str,
    change: MemoryChange,
    *,
    expected_etag: str | None = None,
    caller: Caller | None = None,
) -> Memory:
    return await run(
        store,
        UpdateMemory(
            caller=caller,
            user_id=user_id,
            memory_id=memory_id,
            change=change,
            expected_etag=expected_etag,
        ),
    )


async def delete_memory(
    store: CommandStore,
    user_id: str,
    memory_id: str,
    *,
    expected_etag: str | None = None,
    caller: Caller | None = None,
) -> MemoryTombstone:
    return await run(
        store,
        DeleteMemory(
            caller=caller, user_id=user_id, memory_id=memory_id, expected_etag=expected_etag
        ),
    )


async def propose_candidates(
    store: CommandStore,
    user_id: str,
    candidates: Sequence[CandidateDraft],
    *,
    idempotency: Idempotency | None = None,
    caller: Caller | None = None,
) -> tuple[MemoryCandidate, ...]:
    return await run(
        store,
        ProposeCandidates(
            caller=caller,
            user_id=user_id,
            candidates=tuple(candidates),
            idempotency=idempotency,
        ),
    )


async def approve_candidate(
    store: CommandStore,
    user_id: str,
    candidate_id: str,
    *,
    memory_id: str,
    caller: Caller | None = None,
) -> tuple[Memory, MemoryCandidate]:
    return await run(
        store,
        ApproveCandidate(
            caller=caller, user_id=user_id, candidate_id=candidate_id, memory_id=memory_id
        ),
    )


async def reject_candidate(
    store: CommandStore, user_id: str, candidate_id: str, *, caller: Caller | None = None
) -> MemoryCandidate:
    return await run(
        store, RejectCandidate(caller=caller, user_id=user_id, candidate_id=candidate_id)
    )


# ---------------------------------------------------------------- governance


async def set_consent(
    store: CommandStore,
    user_id: str,
    state: ConsentState,
    policy_version: str = "",
    *,
    caller: Caller | None = None,
) -> ConsentChange:
    return await run(
        store,
        SetConsent(caller=caller, user_id=user_id, state=state, policy_version=policy_version),
    )


async def update_memory_settings(
    store: CommandStore,
    user_id: str,
    *,
    enabled: bool,
    expected_etag: str | None = None,
    caller: Caller | None = None,
) -> MemorySettings:
    return await run(
        store,
        UpdateMemorySettings(
            caller=caller, user_id=user_id, enabled=enabled, expected_etag=expected_etag
        ),
    )


# ------------------------------------------------------- a user's data whole


async def erase_user(
    user_data: UserDataStore, user_id: str, *, caller: Caller | None = None
) -> ErasureReceipt:
    return (await user_data.erase_user(DeleteUserData(caller=caller, user_id=user_id))).value


async def import_user(
    user_data: UserDataStore, user_id: str, data: UserData, *, caller: Caller | None = None
) -> None:
    await user_data.import_user(ImportUserData(caller=caller, user_id=user_id, data=data))
