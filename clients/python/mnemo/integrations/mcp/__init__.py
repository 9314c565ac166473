"""Mnemo as a Model Context Protocol server (extra ``mnemo-client[mcp]``;
the command is ``mnemo mcp``, docs/integrations/mcp.md).

Tools, acting for one user: ``memory_save``, ``memory_recall``,
``memory_list``, ``memory_update``, ``memory_delete``, ``memory_context``,
``working_memory_get``, ``working_memory_remember``. A failed call, a
governance refusal included, is a tool error (``isError: true``) with the
reason.
"""

from mnemo.integrations.mcp.identity import (
    Identity,
    IdentityError,
    resolve_identity,
    token_file_reader,
    token_subject,
)
from mnemo.integrations.mcp.server import build_server
from mnemo.integrations.mcp.transports import serve_http, serve_stdio

__all__ = [
    "Identity",
    "IdentityError",
    "build_server",
    "resolve_identity",
    "serve_http",
    "serve_stdio",
    "token_file_reader",
    "token_subject",
]
