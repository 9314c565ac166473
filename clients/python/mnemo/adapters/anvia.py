"""Anvia's ``MemoryStore`` over Mnemo's conversation history.

The one-line swap::

    agent = AgentBuilder("support", model).memory(MnemoMemoryStore(mnemo, user_id="u1")).build()

``mnemo`` is a ``MnemoClient`` (``MnemoMemoryStore``) or an
``AsyncMnemoClient`` (``AsyncMnemoMemoryStore``, every method a coroutine).
A session id is a Mnemo conversation id; the scope's ``user_id`` (else the
store's ``user_id``) is the Mnemo user.

- ``load`` returns the canonical, replayable history: every message ever
  appended, in position order, as the seed requires (compaction never deletes
  a canonical message; ``compaction.snapshot`` gives the compacted view and
  its revision). A session never written loads as ``[]``.
- ``append``, ``record_error`` and ``compaction.replace_prefix`` carry one
  request id per call and are sent again with it after ``UNAVAILABLE`` or
  ``DEADLINE_EXCEEDED`` (``retry``), so a write whose answer was lost is
  applied once.
- ``run(scope, run_id, policy)`` is Anvia's save policy: it turns a run's
  completed messages into exactly the writes ``"message"``, ``"turn"`` or
  ``"run"`` describe (see ``RunRecorder``).

Errors: every method raises ``mnemo.client.MnemoError`` subclasses, except that
a session that does not exist reads as empty and clears as a no-op, and a
stale compaction revision is reported as ``ReplaceResult("conflict")``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal

from mnemo.adapters._steps import (
    DEFAULT_RETRY,
    Call,
    ClientT,
    RetryPolicy,
    Steps,
    awaitable,
    blocking,
    retrying,
)
from mnemo.client import AsyncMnemoClient, MnemoClient
from mnemo.client._calls import Page
from mnemo.client._history import compact_json
from mnemo.client.errors import NotFoundError, RevisionStaleError
from mnemo.v1 import conversations_pb2 as cv

__all__ = [
    "AsyncCompaction",
    "AsyncInspector",
    "AsyncMnemoMemoryStore",
    "AsyncRunRecorder",
    "Compaction",
    "ConversationRecord",
    "ConversationSummary",
    "HistorySnapshot",
    "Inspector",
    "MemoryScope",
    "Message",
    "MnemoMemoryStore",
    "ReplaceResult",
    "RunRecorder",
    "SavePolicy",
    "StoredMessage",
]

#: An Anvia message: a JSON object with ``role`` and ``content``.
Message = dict[str, Any]
#: When a run's messages are written: see ``RunRecorder``.
SavePolicy = Literal["message", "turn", "run"]


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """Anvia's ``MemoryScope``: the session, its user, metadata for a new conversation."""

    session_id: str
    user_id: str | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """One row of ``inspector.list_conversations``; ``ref`` names it for ``get_conversation``."""

    ref: str
    session_id: str
    user_id: str
    metadata: dict[str, Any]
    created_at: datetime.datetime
    updated_at: datetime.datetime
    message_count: int


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A canonical message with where and when it was written."""

    position: int
    run_id: str
    turn: int
    created_at: datetime.datetime
    message: Message


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """What ``inspector.get_conversation`` returns: the summary and every canonical message."""

    conversation: ConversationSummary
    messages: list[StoredMessage]


@dataclass(frozen=True, slots=True)
class HistorySnapshot:
    """``compaction.snapshot``: the revision to compact against and the projection."""

    revision: str
    messages: list[Message]


@dataclass(frozen=True, slots=True)
class ReplaceResult:
    """``compaction.replace_prefix``: ``"committed"`` with the new revision, or
    ``"conflict"`` (nothing changed) when the revision was stale."""

    status: Literal["committed", "conflict"]
    revision: str = ""

    @property
    def committed(self) -> bool:
        return self.status == "committed"


#: The most messages one ``AppendMessages`` takes.
MAX_APPEND = 500


def derived_request_id(kind: str, *parts: Any) -> str:
    """A request id derived from what a write writes (``kind:sha256``), as the
    TypeScript adapters derive theirs: the same write sent again, by the
    adapter or by the agent after an error, is applied once."""
    return f"{kind}:{hashlib.sha256(compact_json(parts).encode()).hexdigest()}"


def _message(json_text: str) -> Message:
    value: Message = json.loads(json_text)
    return value


def _summary(conversation: cv.Conversation) -> ConversationSummary:
    _, user, _, session = conversation.name.split("/")
    return ConversationSummary(
        ref=conversation.name,
        session_id=session,
        user_id=user,
        metadata=dict(conversation.metadata.items()) if conversation.HasField("metadata") else {},
        created_at=conversation.create_time.ToDatetime(datetime.UTC),
        updated_at=conversation.update_time.ToDatetime(datetime.UTC),
        message_count=conversation.message_count,
    )


def _stored(message: cv.HistoryMessage) -> StoredMessage:
    return StoredMessage(
        position=message.position,
        run_id=message.run_id,
        turn=message.turn,
        created_at=message.create_time.ToDatetime(datetime.UTC),
        message=_message(message.message_json),
    )


def _error_fields(error: BaseException | Mapping[str, Any] | str) -> dict[str, Any]:
    """``record_failed_run`` keywords for an exception, a ``{message, code, ...}`` dict or text."""
    if isinstance(error, str):
        return {"error": error}
    if isinstance(error, Mapping):
        details = {k: v for k, v in error.items() if k not in ("message", "code")}
        return {
            "error": str(error.get("message") or "error"),
            "error_code": str(error.get("code") or ""),
            "error_details": details or None,
        }
    code = getattr(error, "code", "")
    return {
        "error": str(error) or type(error).__name__,
        "error_code": code if isinstance(code, str) else getattr(code, "name", str(code)),
        "error_details": {"type": type(error).__name__},
    }


class _StoreSteps:
    """Every store operation as steps, for the blocking and the asyncio store."""

    def __init__(self, user_id: str | None, retry: RetryPolicy) -> None:
        self.user_id = user_id
        self.retry = retry

    def _user(self, scope: MemoryScope) -> str:
        user = scope.user_id or self.user_id
        if not user:
            raise ValueError("the scope has no user_id and the store has no default user_id")
        return user

    def load(self, scope: MemoryScope) -> Steps[list[Message]]:
        """The session's canonical, replayable history; ``[]`` if never written."""
        user = self._user(scope)
        try:
            messages = yield lambda c: c.stream_messages(user, scope.session_id)
        except NotFoundError:
            return []
        return [_message(m.message_json) for m in messages]

    def append(
        self, *, scope: MemoryScope, run_id: str, turn: int, messages: Iterable[Message]
    ) -> Steps[None]:
        """Append messages at the end of the history: one write (one per 500
        messages), whose request id is derived from what it writes, so a retry,
        the adapter's or the agent's own, is applied once."""
        batch, user = list(messages), self._user(scope)
        for start in range(0, len(batch), MAX_APPEND):
            chunk = batch[start : start + MAX_APPEND]
            request_id = derived_request_id(
                "anvia-append", user, scope.session_id, run_id, turn, start, chunk
            )
            yield from retrying(
                self._append_call(user, scope, run_id, turn, chunk, request_id), self.retry
            )

    @staticmethod
    def _append_call(
        user: str,
        scope: MemoryScope,
        run_id: str,
        turn: int,
        messages: list[Message],
        request_id: str,
    ) -> Call:
        return lambda c: c.append_messages(
            user,
            scope.session_id,
            messages,
            run_id=run_id,
            turn=turn,
            metadata=scope.metadata,
            request_id=request_id,
        )

    def clear(self, scope: MemoryScope) -> Steps[None]:
        """Forget the session's history (failed runs stay); a no-op if it does not exist."""
        user = self._user(scope)
        try:
            yield from retrying(lambda c: c.clear_messages(user, scope.session_id), self.retry)
        except NotFoundError:
            return

    def record_error(
        self,
        *,
        scope: MemoryScope,
        run_id: str,
        error: BaseException | Mapping[str, Any] | str,
        messages: Iterable[Message] = (),
    ) -> Steps[None]:
        """Keep a failed run's error and partial messages apart from the history.

        ``error`` is an exception, a ``{"message", "code", ...}`` mapping (the
        other keys become the details) or a message.
        """
        user, fields, batch = self._user(scope), _error_fields(error), list(messages)
        request_id = derived_request_id(
            "anvia-error", user, scope.session_id, run_id, fields, batch
        )
        yield from retrying(
            lambda c: c.record_failed_run(
                user,
                scope.session_id,
                run_id=run_id,
                messages=batch,
                request_id=request_id,
                **fields,
            ),
            self.retry,
        )

    def list_conversations(
        self, *, limit: int = 50, user_id: str | None = None
    ) -> Steps[list[ConversationSummary]]:
        """The user's conversations, most recently updated first, at most ``limit``."""
        user = self._user(MemoryScope("", user_id))
        page: Page[cv.Conversation] = yield lambda c: c.list_conversations_page(
            user, page_size=limit
        )
        return [_summary(conversation) for conversation in page.items[:limit]]

    def get_conversation(self, ref: str) -> Steps[ConversationRecord | None]:
        """A conversation and all its canonical messages; ``None`` if it does not exist."""
        parts = ref.split("/")
        if len(parts) != 4 or parts[0] != "users" or parts[2] != "conversations":
            raise ValueError(f"{ref!r} is not a conversation ref from list_conversations")
        user, session = parts[1], parts[3]
        try:
            conversation = yield lambda c: c.get_conversation(user, session)
            messages = yield lambda c: c.stream_messages(user, session)
        except NotFoundError:
            return None
        return ConversationRecord(_summary(conversation), [_stored(m) for m in messages])

    def snapshot(self, scope: MemoryScope) -> Steps[HistorySnapshot]:
        """The projection and its revision (``""`` and ``[]`` for a session never written)."""
        user = self._user(scope)
        try:
            snapshot = yield lambda c: c.snapshot_history(user, scope.session_id)
        except NotFoundError:
            return HistorySnapshot("", [])
        return HistorySnapshot(
            snapshot.revision, [_message(m.message_json) for m in snapshot.messages]
        )

    def replace_prefix(
        self,
        *,
        scope: MemoryScope,
        revision: str,
        message_count: int,
        replacement: Message | Iterable[Message],
        run_id: str = "",
    ) -> Steps[ReplaceResult]:
        """Replace the projection's first ``message_count`` messages with
        ``replacement`` (one message, or several); ``ReplaceResult("conflict")``
        if ``revision`` is stale."""
        user = self._user(scope)
        batch = [replacement] if isinstance(replacement, Mapping) else list(replacement)
        request_id = derived_request_id(
            "anvia-compact", user, scope.session_id, revision, message_count, batch, run_id
        )
        try:
            snapshot = yield from retrying(
                lambda c: c.replace_history_prefix(
                    user,
                    scope.session_id,
                    revision=revision,
                    message_count=message_count,
                    replacement=batch,
                    run_id=run_id,
                    request_id=request_id,
                ),
                self.retry,
            )
        except (RevisionStaleError, NotFoundError):
            return ReplaceResult("conflict")
        return ReplaceResult("committed", snapshot.revision)


# ---------------------------------------------------------------- save policies


@dataclass
class _RunState:
    """What a run has produced, and how much of it is written."""

    messages: list[tuple[int, Message]] = field(default_factory=list)
    saved: int = 0
    ended: bool = False


class _RecorderSteps:
    """Anvia's save policies as steps (see ``RunRecorder``)."""

    def __init__(
        self, store: _StoreSteps, scope: MemoryScope, run_id: str, policy: SavePolicy
    ) -> None:
        if policy not in ("message", "turn", "run"):
            raise ValueError(f"policy must be 'message', 'turn' or 'run', not {policy!r}")
        self.store, self.scope, self.run_id, self.policy = store, scope, run_id, policy
        self._run = _RunState()

    @property
    def messages(self) -> list[Message]:
        """Every message of the run so far, in order."""
        return [message for _, message in self._run.messages]

    def _open(self) -> None:
        if self._run.ended:
            raise RuntimeError(f"run {self.run_id!r} has ended")

    def _flush(self, turn: int) -> Steps[None]:
        pending = [message for _, message in self._run.messages[self._run.saved :]]
        yield from self.store.append(
            scope=self.scope, run_id=self.run_id, turn=turn, messages=pending
        )
        self._run.saved = len(self._run.messages)

    def completed(self, message: Message, turn: int = 0) -> Steps[None]:
        """A message is complete (the prompt, an assistant message, a tool result)."""
        self._open()
        self._run.messages.append((turn, message))
        if self.policy == "message":
            yield from self._flush(turn)

    def turn_completed(self, turn: int) -> Steps[None]:
        """A model/tool turn is over."""
        self._open()
        if self.policy == "turn":
            yield from self._flush(turn)

    def succeeded(self) -> Steps[None]:
        """The final response is complete: write what the policy has held back."""
        self._open()
        last_turn = self._run.messages[-1][0] if self._run.messages else 0
        yield from self._flush(last_turn)
        self._run.ended = True

    def failed(self, error: BaseException | Mapping[str, Any] | str) -> Steps[None]:
        """The run failed: record the error with every message of the run."""
        self._open()
        self._run.ended = True
        yield from self.store.record_error(
            scope=self.scope, run_id=self.run_id, error=error, messages=self.messages
        )


class _Recorder(Generic[ClientT]):
    def __init__(self, client: ClientT, steps: _RecorderSteps) -> None:
        self._client = client
        self.steps = steps

    @property
    def messages(self) -> list[Message]:
        """Every completed message of the run so far, in order."""
        return self.steps.messages

    @property
    def policy(self) -> SavePolicy:
        return self.steps.policy


class RunRecorder(_Recorder[MnemoClient]):
    """One run's writes under a save policy (Anvia's ``savePolicy``), blocking.

    Report the run as it goes: ``completed(message, turn)`` for the user prompt
    and each completed assistant or tool-result message, ``turn_completed(turn)``
    after each model/tool turn, then ``succeeded()`` after the final response
    or ``failed(error)``. The writes are exactly:

    - ``"message"``: one ``append`` per completed message, as soon as it is
      reported (best recovery for long failed runs);
    - ``"turn"``: one ``append`` per turn with that turn's messages, at
      ``turn_completed`` (the prompt goes with the first turn);
    - ``"run"``: one ``append`` with every message of the run, at
      ``succeeded``; nothing before.

    Whatever was reported but not yet written is written by ``succeeded``.
    ``failed`` writes no history: it records the error and every message of
    the run (``record_error``). Each write has its own request id.
    """

    completed = blocking(_RecorderSteps.completed)
    turn_completed = blocking(_RecorderSteps.turn_completed)
    succeeded = blocking(_RecorderSteps.succeeded)
    failed = blocking(_RecorderSteps.failed)


class AsyncRunRecorder(_Recorder[AsyncMnemoClient]):
    """``RunRecorder`` for asyncio: the same writes, every method a coroutine."""

    completed = awaitable(_RecorderSteps.completed)
    turn_completed = awaitable(_RecorderSteps.turn_completed)
    succeeded = awaitable(_RecorderSteps.succeeded)
    failed = awaitable(_RecorderSteps.failed)


# ---------------------------------------------------------------- the stores


class _Facet(Generic[ClientT]):
    def __init__(self, client: ClientT, steps: _StoreSteps) -> None:
        self._client = client
        self.steps = steps


class Inspector(_Facet[MnemoClient]):
    """Anvia's read-only inspector (blocking)."""

    list_conversations = blocking(_StoreSteps.list_conversations)
    get_conversation = blocking(_StoreSteps.get_conversation)


class AsyncInspector(_Facet[AsyncMnemoClient]):
    """Anvia's read-only inspector (asyncio)."""

    list_conversations = awaitable(_StoreSteps.list_conversations)
    get_conversation = awaitable(_StoreSteps.get_conversation)


class Compaction(_Facet[MnemoClient]):
    """Anvia's compaction capability (blocking)."""

    snapshot = blocking(_StoreSteps.snapshot)
    replace_prefix = blocking(_StoreSteps.replace_prefix)


class AsyncCompaction(_Facet[AsyncMnemoClient]):
    """Anvia's compaction capability (asyncio)."""

    snapshot = awaitable(_StoreSteps.snapshot)
    replace_prefix = awaitable(_StoreSteps.replace_prefix)


class MnemoMemoryStore(_Facet[MnemoClient]):
    """Anvia's ``MemoryStore`` backed by Mnemo (blocking). See the module for errors."""

    def __init__(
        self, client: MnemoClient, *, user_id: str | None = None, retry: RetryPolicy = DEFAULT_RETRY
    ) -> None:
        super().__init__(client, _StoreSteps(user_id, retry))
        #: The read-only inspector: ``list_conversations``, ``get_conversation``.
        self.inspector = Inspector(client, self.steps)
        #: The compaction capability: ``snapshot``, ``replace_prefix``.
        self.compaction = Compaction(client, self.steps)

    load = blocking(_StoreSteps.load)
    append = blocking(_StoreSteps.append)
    clear = blocking(_StoreSteps.clear)
    record_error = blocking(_StoreSteps.record_error)

    def run(self, scope: MemoryScope, run_id: str, policy: SavePolicy = "message") -> RunRecorder:
        """A recorder writing one run under ``policy`` (Anvia's default: ``"message"``)."""
        return RunRecorder(self._client, _RecorderSteps(self.steps, scope, run_id, policy))


class AsyncMnemoMemoryStore(_Facet[AsyncMnemoClient]):
    """Anvia's ``MemoryStore`` backed by Mnemo (asyncio). See the module for errors."""

    def __init__(
        self,
        client: AsyncMnemoClient,
        *,
        user_id: str | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        super().__init__(client, _StoreSteps(user_id, retry))
        #: The read-only inspector: ``list_conversations``, ``get_conversation``.
        self.inspector = AsyncInspector(client, self.steps)
        #: The compaction capability: ``snapshot``, ``replace_prefix``.
        self.compaction = AsyncCompaction(client, self.steps)

    load = awaitable(_StoreSteps.load)
    append = awaitable(_StoreSteps.append)
    clear = awaitable(_StoreSteps.clear)
    record_error = awaitable(_StoreSteps.record_error)

    def run(
        self, scope: MemoryScope, run_id: str, policy: SavePolicy = "message"
    ) -> AsyncRunRecorder:
        """A recorder writing one run under ``policy`` (Anvia's default: ``"message"``)."""
        return AsyncRunRecorder(self._client, _RecorderSteps(self.steps, scope, run_id, policy))
