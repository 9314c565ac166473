"""How a failed Mnemo call reaches the model: as an MCP tool error
(``isError: true``) whose text names the reason and, for bad input, the
tool's own argument, so the model can correct the call or tell the user (the
SDK puts ``Error executing tool NAME:`` before it):

    MEMORY_CONSENT_WITHDRAWN: users/u1 has withdrawn consent to memory: nothing can be saved ...
    INVALID_ARGUMENT [FIELD_TOO_LARGE]: memory.text: at most 4096 bytes of UTF-8 (got 5000) ...
      text: at most 4096 bytes of UTF-8 (got 5000)

The governance refusals (``MEMORY_CONSENT_WITHDRAWN``, ``MEMORY_DISABLED``,
``TEMPORARY_CONVERSATION``) lead with the reason alone: they are no mistake
of the call, and nothing was stored.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.mcpserver.exceptions import ToolError

from mnemo.client import MnemoError

GOVERNANCE_REASONS = frozenset(
    {"MEMORY_CONSENT_WITHDRAWN", "MEMORY_DISABLED", "TEMPORARY_CONVERSATION"}
)

#: Request fields of the RPCs as the tools' arguments name them.
_ARGUMENTS: Mapping[str, str] = {
    "memory.text": "text",
    "memory.key": "key",
    "memory.scope": "scope",
    "memory.pinned": "pinned",
    "memory.etag": "etag",
    "memory.name": "memory_id",
    "memory": "memory_id",
    "name": "memory_id",
    "max_results": "limit",
    "page_size": "limit",
    "exchange.ask": "ask",
    "exchange.answer": "answer",
}


def argument_of(field: str) -> str:
    """The tool argument a request field stands for (``memory.text`` -> ``text``);
    a field no argument stands for keeps its name."""
    return _ARGUMENTS.get(field, field)


def tool_error(error: MnemoError) -> ToolError:
    """The tool error for a failed call."""
    if error.reason in GOVERNANCE_REASONS:
        head = f"{error.reason}: {error.message}"
    else:
        reason = f" [{error.reason}]" if error.reason else ""
        head = f"{error.code.name}{reason}: {error.message}"
    lines = [head]
    lines += [f"  {argument_of(v.field)}: {v.description}" for v in error.field_violations]
    return ToolError("\n".join(lines))


def gate_refusal(reason: str, message: str) -> ToolError:
    """The tool error for a read that a closed governance gate left empty."""
    return ToolError(f"{reason}: {message}")
