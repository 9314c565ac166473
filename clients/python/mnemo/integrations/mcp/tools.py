"""The MCP tools: one Mnemo call each (two for a read a governance gate left
empty), for the one user of an ``Identity``, through the ``AsyncMnemoClient``
that the server's lifespan opened (``Context.request_context.lifespan_context``).

Every tool's arguments are checked against its input schema before it runs
(a bad argument is a tool error naming it); a failed call is a tool error
with the reason (``errors.tool_error``). Writes carry a fresh request id
where the RPC takes one (``CreateMemory``, ``RememberExchange``: the client
generates it once per call, so its transparent retries apply the write once)
and the identity's conversation as their ``origin_conversation``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from mnemo.client import AsyncMnemoClient, MnemoError, NotFoundError
from mnemo.integrations.mcp.errors import gate_refusal, tool_error
from mnemo.integrations.mcp.identity import Identity
from mnemo.integrations.mcp.results import (
    DeletedMemory,
    ExchangeEntry,
    MemoryContext,
    MemoryEntry,
    MemoryPage,
    Recalled,
    RecallHit,
    Remembered,
    SavedMemory,
    WorkingMemory,
    last_segment,
)
from mnemo.v1 import governance_pb2 as gv

T = TypeVar("T")
ToolContext = Context[AsyncMnemoClient, Any]

MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        description="The entry's id, as memory_save, memory_recall or memory_list returned it.",
    ),
]
Etag = Annotated[
    str,
    Field(
        max_length=256,
        description="Optional: the entry's etag, to change it only if nobody changed it since.",
    ),
]


def client_of(ctx: ToolContext) -> AsyncMnemoClient:
    """The client the server's lifespan opened."""
    return ctx.request_context.lifespan_context


async def called(call: Callable[[], Awaitable[T]]) -> T:
    """``await call()``; a ``MnemoError`` becomes a tool error (also one the
    client raises before sending, such as a ``/`` in an id)."""
    try:
        return await call()
    except MnemoError as error:
        raise tool_error(error) from error


class MnemoTools:
    """The tools of one identity; ``register`` adds them to an ``MCPServer``."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity

    @property
    def user(self) -> str:
        return self.identity.user

    # ----------------------------------------------------------- long-term

    async def memory_save(
        self,
        ctx: ToolContext,
        text: Annotated[
            str,
            Field(
                min_length=1,
                description="The fact to remember, one short self-contained sentence "
                "(at most 4096 bytes), e.g. 'Prefers window seats'.",
            ),
        ],
        key: Annotated[
            str,
            Field(
                max_length=256,
                description="Optional topic key, e.g. 'seat_preference': saving again with the "
                "same key replaces the earlier entry instead of adding a second one.",
            ),
        ] = "",
        scope: Annotated[
            Literal["identity", "conversation"],
            Field(
                description="identity (default): remembered in every conversation; "
                "conversation: only in the current one."
            ),
        ] = "identity",
    ) -> SavedMemory:
        conversation = self.identity.conversation
        if scope == "conversation" and not conversation:
            raise ToolError(
                "INVALID_ARGUMENT: scope: 'conversation' needs a current "
                "conversation, and this server acts in none (start it with --conversation); "
                "use scope 'identity'"
            )
        response = await called(
            lambda: client_of(ctx).create_memory(
                self.user,
                text,
                key=key,
                scope=scope,
                conversation=conversation if scope == "conversation" else None,
                origin_conversation=conversation,
            ),
        )
        return SavedMemory.of(response)

    async def memory_recall(
        self,
        ctx: ToolContext,
        query: Annotated[
            str,
            Field(
                min_length=1,
                description="What to look for, in words: a question or the topic "
                "('where does the user live').",
            ),
        ],
        limit: Annotated[
            int, Field(ge=1, le=100, description="At most this many entries (1 to 100).")
        ] = 5,
    ) -> Recalled:
        client = client_of(ctx)

        async def hits() -> list[RecallHit]:
            stream = client.recall_memories(
                self.user, query, conversation=self.identity.conversation, max_results=limit
            )
            return [
                RecallHit(memory=MemoryEntry.of(hit.memory), rank=hit.rank, score=hit.score)
                async for hit in stream
            ]

        found = await called(hits)
        if not found:
            await self._refuse_if_gated(client, inject=False)
        return Recalled(hits=found)

    async def memory_list(
        self,
        ctx: ToolContext,
        limit: Annotated[int, Field(ge=1, le=100, description="Entries per page (1 to 100).")] = 20,
        page_token: Annotated[
            str,
            Field(
                max_length=4096,
                description="The next_page_token of the previous page; '' for the first page.",
            ),
        ] = "",
    ) -> MemoryPage:
        page = await called(
            lambda: client_of(ctx).list_memories_page(
                self.user, page_size=limit, page_token=page_token
            ),
        )
        return MemoryPage(
            memories=[MemoryEntry.of(memory) for memory in page.items],
            next_page_token=page.next_page_token,
        )

    async def memory_update(
        self,
        ctx: ToolContext,
        memory_id: MemoryId,
        text: Annotated[
            str, Field(min_length=1, description="The entry's new text (at most 4096 bytes).")
        ],
        pinned: Annotated[
            bool | None,
            Field(description="Optional: pin (true) or unpin (false) the entry as well."),
        ] = None,
        etag: Etag = "",
    ) -> MemoryEntry:
        memory = await called(
            lambda: client_of(ctx).update_memory(
                self.user,
                memory_id,
                text=text,
                pinned=pinned,
                etag=etag,
                origin_conversation=self.identity.conversation,
            ),
        )
        return MemoryEntry.of(memory)

    async def memory_delete(
        self, ctx: ToolContext, memory_id: MemoryId, etag: Etag = ""
    ) -> DeletedMemory:
        tombstone = await called(
            lambda: client_of(ctx).delete_memory(
                self.user, memory_id, etag=etag, origin_conversation=self.identity.conversation
            ),
        )
        return DeletedMemory.of(tombstone)

    async def memory_context(
        self,
        ctx: ToolContext,
        query: Annotated[
            str,
            Field(
                min_length=1,
                description="The user's message the context is for.",
            ),
        ],
        max_bytes: Annotated[
            int,
            Field(
                ge=1,
                le=16384,
                description="Budget of remembered text in bytes (1 to 16384); the answer never "
                "holds more.",
            ),
        ] = 1536,
        max_entries: Annotated[
            int, Field(ge=1, le=50, description="At most this many entries (1 to 50).")
        ] = 5,
    ) -> MemoryContext:
        client = client_of(ctx)
        response = await called(
            lambda: client.build_context(
                self.user,
                query,
                conversation=self.identity.conversation,
                max_entries=max_entries,
                max_bytes=max_bytes,
            ),
        )
        if not response.system_message:
            await self._refuse_if_gated(client, inject=True)
        return MemoryContext(
            system_message=response.system_message,
            memory_ids=[last_segment(name) for name in response.memories],
            used_bytes=response.used_bytes,
        )

    # ------------------------------------------------------------- working

    async def working_memory_get(self, ctx: ToolContext) -> WorkingMemory:
        state = await called(
            lambda: client_of(ctx).get_memory_state(self.user, self.identity.conversation),
        )
        return WorkingMemory.of(state)

    async def working_memory_remember(
        self,
        ctx: ToolContext,
        ask: Annotated[str, Field(min_length=1, description="What the user asked.")],
        answer: Annotated[str, Field(description="What the assistant answered.")],
        summary: Annotated[
            str | None,
            Field(
                description="Optional: a new rolling summary (a few sentences) that replaces "
                "the stored one, e.g. with evicted exchanges folded in."
            ),
        ] = None,
    ) -> Remembered:
        remembered = await called(
            lambda: client_of(ctx).remember_exchange(
                self.user, self.identity.conversation, ask=ask, answer=answer, summary=summary
            ),
        )
        return Remembered(
            state=WorkingMemory.of(remembered.state),
            evicted=[ExchangeEntry.of(exchange) for exchange in remembered.evicted],
        )

    # ----------------------------------------------------------- internals

    async def _refuse_if_gated(self, client: AsyncMnemoClient, *, inject: bool) -> None:
        """Raise the tool error of the governance gate that left a read empty, if one is closed.

        Recall and context answer an empty success when consent is withdrawn or
        memory is switched off (context also in a temporary conversation), so
        that a send is never blocked; a tool that returned that would tell the
        model "nothing is remembered" when the truth is "memory is off".
        """
        user = f"users/{self.user}"
        consent = await called(lambda: client.get_consent(self.user))
        if consent.state == gv.CONSENT_STATE_WITHDRAWN:
            raise gate_refusal(
                "MEMORY_CONSENT_WITHDRAWN",
                f"{user} has withdrawn consent to memory: nothing is recalled until consent "
                "is granted again",
            )
        conversation = self.identity.conversation
        if inject and conversation and await self._is_temporary(client, conversation):
            raise gate_refusal(
                "TEMPORARY_CONVERSATION",
                f"{user}/conversations/{conversation} is a temporary conversation: no memory is "
                "used or saved in it",
            )
        settings = await called(lambda: client.get_memory_settings(self.user))
        if not settings.enabled:
            raise gate_refusal(
                "MEMORY_DISABLED", f"{user} has switched memory off: nothing is recalled"
            )

    async def _is_temporary(self, client: AsyncMnemoClient, conversation: str) -> bool:
        try:
            found = await client.get_conversation(self.user, conversation)
        except NotFoundError:  # a conversation not created yet is no temporary one
            return False
        except MnemoError as error:
            raise tool_error(error) from error
        return found.temporary

    # ------------------------------------------------------------ register

    def tools(self) -> list[tuple[Callable[..., Awaitable[Any]], str, str, dict[str, bool]]]:
        """``(function, title, description, hints)`` of every tool, in listing order."""
        read = {"read_only_hint": True, "idempotent_hint": True}
        return [
            (
                self.memory_save,
                "Save a memory",
                "Remember a fact about the user across conversations (long-term memory). Use it "
                "when the user states a lasting preference, fact or plan. Returns the saved "
                "entry; with a key, the entries it replaced; and the outcome: 'duplicate' when "
                "the fact was already remembered (nothing new is saved).",
                {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False},
            ),
            (
                self.memory_recall,
                "Recall memories",
                "Search the user's long-term memories for a query, best match first. An empty "
                "list means nothing matches.",
                read,
            ),
            (
                self.memory_list,
                "List memories",
                "List the user's long-term memories, newest first, one page at a time.",
                read,
            ),
            (
                self.memory_update,
                "Update a memory",
                "Replace the text of one of the user's memories (its earlier version stays in "
                "its history), optionally pinning it.",
                {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": True},
            ),
            (
                self.memory_delete,
                "Delete a memory",
                "Forget one of the user's memories for good: its text and every earlier version "
                "are erased. Deleting it again returns the same result.",
                {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": True},
            ),
            (
                self.memory_context,
                "Memory context for a message",
                "The memories relevant to the user's message as one ready-to-use system "
                "message, within a byte budget: call it before answering.",
                read,
            ),
            (
                self.working_memory_get,
                "Get working memory",
                "The current conversation's working memory: a rolling summary and the latest "
                "exchanges.",
                read,
            ),
            (
                self.working_memory_remember,
                "Remember an exchange",
                "Append one question and answer to the conversation's working memory; the "
                "oldest exchanges beyond the kept few come back as evicted, to fold into the "
                "summary.",
                {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False},
            ),
        ]
