"""Mnemo behind the interfaces of agent runtimes and protocols: one subpackage
per runtime, each an optional extra of ``mnemo-client``.

- ``mnemo.integrations.openai_agents``: ``MnemoSession``, a ``Session`` of the
  OpenAI Agents SDK (``pip install 'mnemo-client[openai-agents]'``).
- ``mnemo.integrations.langgraph``: ``MnemoStore`` (a ``BaseStore``) and ``MnemoSaver``
  (a checkpointer) for LangGraph
  (``pip install 'mnemo-client[langgraph]'``).
- ``mnemo.integrations.mcp``: the MCP server behind ``mnemo mcp``
  (``pip install 'mnemo-client[mcp]'``).
- ``mnemo.integrations.adk``: ``MnemoSessionService`` and ``MnemoMemoryService``,
  Google ADK's session and memory services (``pip install 'mnemo-client[adk]'``).

Importing this package imports no runtime; each subpackage imports its own.
"""
