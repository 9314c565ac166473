"""Mnemo as the memory of agent runtimes: one module per runtime, each an optional extra.

- ``mnemo.integrations.openai_agents``: ``MnemoSession``, a ``Session`` of the
  OpenAI Agents SDK (``pip install 'mnemo-client[openai-agents]'``).

Importing this package imports no runtime; each module imports its own.
"""
