"""Mnemo for LangGraph (``pip install 'mnemo-client[langgraph]'``).

- ``MnemoStore``: a ``langgraph.store.base.BaseStore`` over Mnemo's
  ``DocumentService`` (``mnemo.integrations.langgraph.store``).
"""

from mnemo.integrations.langgraph.store import MnemoStore

__all__ = ["MnemoStore"]
