"""Every MCP tool of ``mnemo.integrations.mcp`` through the SDK's client, in
process, against a real Mnemo server on SQLite and on PostgreSQL: what each
tool returns, what it stored (read back with the plain client), governance
refusals as tool errors with the reason, and bad input as a tool error
naming the argument."""

from __future__ import annotations

import json

from sqlalchemy import create_engine, select

from mnemo.client import MnemoClient
from mnemo.integrations.mcp import Identity
from mnemo.v1 import memories_pb2 as mm
from mnemo_server.store.schema import idempotency_records
from tests.mcp.conftest import MnemoServer, mcp_client, refused, result_text, succeeded

TOOLS = [
    "memory_save",
    "memory_recall",
    "memory_list",
    "memory_update",
    "memory_delete",
    "memory_context",
    "working_memory_get",
    "working_memory_remember",
]


async def test_the_tools_are_listed_with_schemas(mnemo_target: str, user: str) -> None:
    async with mcp_client(mnemo_target, Identity(user)) as client:
        listed = (await client.list_tools()).tools
    assert [tool.name for tool in listed] == TOOLS
    for tool in listed:
        assert tool.description and tool.title and tool.output_schema, tool.name
        assert tool.input_schema["type"] == "object"
        for name, argument in tool.input_schema.get("properties", {}).items():
            assert argument.get("description"), (tool.name, name)
        assert tool.annotations is not None
    schemas = {tool.name: tool.input_schema for tool in listed}
    assert schemas["memory_save"]["required"] == ["text"]
    assert schemas["memory_save"]["properties"]["scope"]["enum"] == ["identity", "conversation"]
    assert schemas["memory_recall"]["properties"]["limit"]["maximum"] == 100
    assert schemas["memory_update"]["required"] == ["memory_id", "text"]
    assert schemas["working_memory_get"].get("properties", {}) == {}
    saved = next(tool.output_schema for tool in listed if tool.name == "memory_save")
    assert saved is not None
    assert saved["properties"]["outcome"]["enum"] == ["created", "historical", "duplicate"]
    assert "outcome" in saved["required"]
    read_only = {
        tool.name for tool in listed if tool.annotations and tool.annotations.read_only_hint
    }
    assert read_only == {"memory_recall", "memory_list", "memory_context", "working_memory_get"}


async def test_long_term_memory_tools(mnemo_target: str, mnemo: MnemoClient, user: str) -> None:
    async with mcp_client(mnemo_target, Identity(user)) as client:
        first = succeeded(
            await client.call_tool("memory_save", {"text": "Lives in Oslo", "key": "home"})
        )
        assert first["replaced"] == []
        moved = succeeded(
            await client.call_tool("memory_save", {"text": "Lives in Bergen", "key": "home"})
        )
        assert moved["replaced"] == [first["memory"]["id"]]
        tea = succeeded(await client.call_tool("memory_save", {"text": "Drinks green tea"}))
        entry = tea["memory"]
        assert (entry["text"], entry["key"], entry["scope"], entry["source"]) == (
            "Drinks green tea",
            "",
            "identity",
            "tool_call",
        )
        # What the tools stored, through the plain client.
        stored = {m.name.rpartition("/")[2]: m for m in mnemo.list_memories(user)}
        assert set(stored) == {moved["memory"]["id"], entry["id"]}
        assert stored[entry["id"]].source == mm.MEMORY_SOURCE_TOOL_CALL
        assert [first["outcome"], moved["outcome"], tea["outcome"]] == ["created"] * 3
        # A fact already remembered: nothing saved, the existing entry, and the agent is told.
        same = succeeded(await client.call_tool("memory_save", {"text": "drinks green  TEA!"}))
        assert (same["outcome"], same["memory"], same["replaced"]) == ("duplicate", entry, [])
        again = succeeded(
            await client.call_tool("memory_save", {"text": "Lives in Bergen", "key": "home"})
        )
        assert (again["outcome"], again["memory"], again["replaced"]) == (
            "duplicate",
            moved["memory"],
            [],
        )
        assert {m.name.rpartition("/")[2] for m in mnemo.list_memories(user)} == set(stored)

        recalled = succeeded(await client.call_tool("memory_recall", {"query": "Bergen"}))
        assert [(h["rank"], h["memory"]["text"]) for h in recalled["hits"]] == [
            (1, "Lives in Bergen")
        ]
        assert 0 < recalled["hits"][0]["score"] <= 1
        nothing = succeeded(await client.call_tool("memory_recall", {"query": "zebra"}))
        assert nothing == {"hits": []}

        page = succeeded(await client.call_tool("memory_list", {"limit": 1}))
        assert [m["text"] for m in page["memories"]] == ["Drinks green tea"]
        rest = succeeded(
            await client.call_tool(
                "memory_list", {"limit": 5, "page_token": page["next_page_token"]}
            )
        )
        assert [m["text"] for m in rest["memories"]] == ["Lives in Bergen"]
        assert rest["next_page_token"] == ""

        updated = succeeded(
            await client.call_tool(
                "memory_update",
                {"memory_id": entry["id"], "text": "Drinks jasmine tea", "pinned": True},
            )
        )
        assert (updated["text"], updated["pinned"]) == ("Drinks jasmine tea", True)
        assert updated["etag"] != entry["etag"]
        stale = refused(
            await client.call_tool(
                "memory_update", {"memory_id": entry["id"], "text": "x", "etag": entry["etag"]}
            )
        )
        assert "ETAG_MISMATCH" in stale
        assert mnemo.get_memory(user, entry["id"]).text == "Drinks jasmine tea"

        context = succeeded(
            await client.call_tool("memory_context", {"query": "what tea", "max_bytes": 64})
        )
        assert "Drinks jasmine tea" in context["system_message"]
        assert context["memory_ids"] == [entry["id"]]
        assert 0 < context["used_bytes"] <= 64

        deleted = succeeded(await client.call_tool("memory_delete", {"memory_id": entry["id"]}))
        assert (deleted["id"], deleted["key"]) == (entry["id"], "")
        assert deleted["delete_time"]
        again = succeeded(await client.call_tool("memory_delete", {"memory_id": entry["id"]}))
        assert again == deleted
        assert [m.text for m in mnemo.list_memories(user)] == ["Lives in Bergen"]
        gone = refused(
            await client.call_tool("memory_update", {"memory_id": entry["id"], "text": "y"})
        )
        assert gone.startswith("Error executing tool memory_update: NOT_FOUND")


async def test_working_memory_tools(mnemo_target: str, mnemo: MnemoClient, user: str) -> None:
    async with mcp_client(mnemo_target, Identity(user, conversation="trip")) as client:
        empty = succeeded(await client.call_tool("working_memory_get"))
        assert empty == {"summary": "", "recent": [], "etag": ""}
        evicted = []
        for turn in range(4):
            remembered = succeeded(
                await client.call_tool(
                    "working_memory_remember", {"ask": f"Q{turn}?", "answer": f"A{turn}."}
                )
            )
            evicted += remembered["evicted"]
        assert [e["ask"] for e in evicted] == ["Q0?"]  # the server keeps 3
        folded = succeeded(
            await client.call_tool(
                "working_memory_remember",
                {"ask": "Q4?", "answer": "A4.", "summary": "Asked Q0 to Q1."},
            )
        )
        state = succeeded(await client.call_tool("working_memory_get"))
    assert state == folded["state"]
    assert state["summary"] == "Asked Q0 to Q1."
    assert [(e["ask"], e["answer"]) for e in state["recent"]] == [
        ("Q2?", "A2."),
        ("Q3?", "A3."),
        ("Q4?", "A4."),
    ]
    assert all(e["at"].endswith("Z") for e in state["recent"])
    # The conversation's working memory, not the user's default one.
    assert mnemo.get_memory_state(user, "trip").etag == state["etag"]
    assert mnemo.get_memory_state(user).etag == ""


async def test_conversation_scope_and_origin(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    async with mcp_client(mnemo_target, Identity(user)) as client:
        unscoped = refused(
            await client.call_tool("memory_save", {"text": "x", "scope": "conversation"})
        )
        assert "scope" in unscoped and "--conversation" in unscoped
    async with mcp_client(mnemo_target, Identity(user, conversation="c1")) as client:
        saved = succeeded(
            await client.call_tool(
                "memory_save", {"text": "Booked the Bergen train", "scope": "conversation"}
            )
        )
    assert saved["memory"]["scope"] == "conversation"
    entry = mnemo.get_memory(user, saved["memory"]["id"])
    assert entry.conversation == f"users/{user}/conversations/c1"
    # Another conversation's tools do not recall it; the same conversation's do.
    async with mcp_client(mnemo_target, Identity(user, conversation="c2")) as client:
        other = succeeded(await client.call_tool("memory_recall", {"query": "Bergen train"}))
    assert other["hits"] == []


async def test_governance_refusals_are_tool_errors(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    mnemo.create_memory(user, "Lives in Oslo")
    async with mcp_client(mnemo_target, Identity(user)) as client:
        mnemo.set_consent(user, "withdrawn")
        save = refused(await client.call_tool("memory_save", {"text": "Works in Bergen"}))
        assert save.startswith("Error executing tool memory_save: MEMORY_CONSENT_WITHDRAWN: ")
        assert f"users/{user} has withdrawn consent" in save
        for tool in ("memory_recall", "memory_context"):
            empty = refused(await client.call_tool(tool, {"query": "Oslo"}))
            assert f"Error executing tool {tool}: MEMORY_CONSENT_WITHDRAWN: " in empty
        # The user's own reads stay their right of access.
        listed = succeeded(await client.call_tool("memory_list"))
        assert [m["text"] for m in listed["memories"]] == ["Lives in Oslo"]
        mnemo.set_consent(user, "granted")

        mnemo.update_memory_settings(user, enabled=False)
        for tool, arguments in [
            ("memory_save", {"text": "Works in Bergen"}),
            ("memory_list", {}),
            ("memory_recall", {"query": "Oslo"}),
            ("memory_context", {"query": "Oslo"}),
        ]:
            off = refused(await client.call_tool(tool, arguments))
            assert f"Error executing tool {tool}: MEMORY_DISABLED: " in off
        mnemo.update_memory_settings(user, enabled=True)
        assert [m.text for m in mnemo.list_memories(user)] == ["Lives in Oslo"]

    temporary = mnemo.create_conversation(user, "incognito", temporary=True)
    assert temporary.temporary
    async with mcp_client(mnemo_target, Identity(user, conversation="incognito")) as client:
        for arguments in [{"text": "Likes jazz"}, {"text": "Likes jazz", "scope": "conversation"}]:
            save = refused(await client.call_tool("memory_save", arguments))
            assert save.startswith("Error executing tool memory_save: TEMPORARY_CONVERSATION: ")
            assert f"users/{user}/conversations/incognito" in save
        context = refused(await client.call_tool("memory_context", {"query": "Oslo"}))
        assert "TEMPORARY_CONVERSATION" in context
        # Recall reads as usual in a temporary conversation; working memory is not gated.
        recalled = succeeded(await client.call_tool("memory_recall", {"query": "Oslo"}))
        assert [h["memory"]["text"] for h in recalled["hits"]] == ["Lives in Oslo"]
        succeeded(await client.call_tool("working_memory_remember", {"ask": "Hi?", "answer": "Hi"}))
    assert [m.text for m in mnemo.list_memories(user)] == ["Lives in Oslo"]


async def test_bad_input_is_a_tool_error_naming_the_argument(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    async with mcp_client(mnemo_target, Identity(user)) as client:
        # Refused by the input schema, before any call to Mnemo.
        missing = refused(await client.call_tool("memory_save", {"key": "k"}))
        assert "\ntext\n  Field required" in missing
        too_many = refused(await client.call_tool("memory_recall", {"query": "a", "limit": 500}))
        assert "\nlimit\n  Input should be less than or equal to 100" in too_many
        scope = refused(await client.call_tool("memory_save", {"text": "a", "scope": "global"}))
        assert "\nscope\n" in scope
        # Refused by the server: its field (memory.text) named as the tool's argument.
        large = refused(await client.call_tool("memory_save", {"text": "x" * 5000}))
        first, *violations = large.split("\n")
        assert first.startswith(
            "Error executing tool memory_save: INVALID_ARGUMENT [FIELD_TOO_LARGE]"
        )
        assert violations and violations[0].startswith("  text: ")
        bad_id = refused(await client.call_tool("memory_delete", {"memory_id": "no/such"}))
        assert "INVALID_NAME" in bad_id
    assert list(mnemo.list_memories(user)) == []


async def test_a_result_is_json_text_too(mnemo_target: str, user: str) -> None:
    """Clients that read only the text content get the same object as JSON."""
    async with mcp_client(mnemo_target, Identity(user)) as client:
        result = await client.call_tool("memory_save", {"text": "Has a cat"})
    assert json.loads(result_text(result)) == succeeded(result)


async def test_writes_carry_a_request_id(mnemo_server: MnemoServer, user: str) -> None:
    """Each write the RPC lets be idempotent carries its own request id: the
    server recorded one result per call (so a retried call applies once)."""
    async with mcp_client(mnemo_server.target, Identity(user)) as client:
        for text in ("Has a cat", "Has a dog"):
            succeeded(await client.call_tool("memory_save", {"text": text}))
        succeeded(await client.call_tool("working_memory_remember", {"ask": "Hi?", "answer": "Hi"}))
    engine = create_engine(mnemo_server.database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(idempotency_records.c.scope, idempotency_records.c.request_id).where(
                    idempotency_records.c.user_id == user
                )
            ).all()
    finally:
        engine.dispose()
    assert sorted(scope for scope, _ in rows) == [
        "CreateMemory",
        "CreateMemory",
        "RememberExchange",
    ]
    assert len({request_id for _, request_id in rows}) == 3
