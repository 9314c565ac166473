"""The Mnemo MCP server: ``build_server`` makes an ``MCPServer`` (the official
SDK's) whose tools act for one user through a running Mnemo server.

    server = build_server("127.0.0.1:50051", Identity("alice"))
    server.run()                      # stdio; or transports.serve_http(server, ...)

In tests, ``mcp.Client(server)`` talks to it in process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any

import grpc
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from mnemo.client import DEFAULT_TARGET, AsyncMnemoClient
from mnemo.integrations.mcp.identity import Identity
from mnemo.integrations.mcp.tools import MnemoTools

SERVER_NAME = "mnemo"
INSTRUCTIONS = (
    "Mnemo is the user's memory. Before answering, call memory_context with the user's message "
    "(or memory_recall) to use what you know about them; when they state a lasting fact, "
    "preference or plan, save it with memory_save (give a key to keep one entry per topic). "
    "working_memory_get and working_memory_remember keep this conversation's running summary. "
    "A tool error that starts with MEMORY_CONSENT_WITHDRAWN, MEMORY_DISABLED or "
    "TEMPORARY_CONVERSATION means the user turned memory off here: tell them, do not retry."
)


def build_server(
    target: str = DEFAULT_TARGET,
    identity: Identity | None = None,
    *,
    token: str | Callable[[], str] | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    timeout: float | None = None,
    options: Sequence[tuple[str, Any]] = (),
) -> MCPServer[AsyncMnemoClient]:
    """An MCP server with the Mnemo tools of ``identity``, calling the Mnemo
    server at ``target``.

    ``token`` is sent with every call (a callable is asked before each one);
    ``credentials`` make the channel TLS; ``timeout`` is each call's deadline
    (``None``: the client's default). The gRPC channel opens when the MCP
    server starts (its lifespan) and closes when it stops; nothing is sent
    before the first tool call.

    Raises:
        ValueError: ``identity`` is missing.
    """
    if identity is None:
        raise ValueError("build_server needs the Identity the tools act for")
    tools = MnemoTools(identity)

    @asynccontextmanager
    async def lifespan(_: MCPServer[AsyncMnemoClient]) -> AsyncIterator[AsyncMnemoClient]:
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        async with AsyncMnemoClient(
            target, token=token, credentials=credentials, options=options, **extra
        ) as client:
            yield client

    server: MCPServer[AsyncMnemoClient] = MCPServer(
        SERVER_NAME,
        title="Mnemo memory",
        instructions=INSTRUCTIONS,
        version=_client_version(),
        lifespan=lifespan,
        log_level="WARNING",
    )
    for function, title, description, hints in tools.tools():
        server.add_tool(
            function,
            name=function.__name__,
            title=title,
            description=description,
            annotations=ToolAnnotations(title=title, open_world_hint=False, **hints),
            structured_output=True,
        )
    return server


def _client_version() -> str:
    try:
        return metadata.version("mnemo-client")
    except metadata.PackageNotFoundError:  # run from a source tree without installing
        return ""
