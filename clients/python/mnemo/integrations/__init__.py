"""Mnemo as the memory of agent runtimes: one module per runtime, each an optional extra.

- ``mnemo.integrations.langgraph``: ``MnemoStore``, a LangGraph ``BaseStore``
  (``pip install 'mnemo-client[langgraph]'``).

Importing this package imports no runtime; each module imports its own.
"""
