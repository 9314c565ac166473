"""Mnemo for LangGraph (``pip install 'mnemo-client[langgraph]'``).

- ``MnemoStore``: a ``langgraph.store.base.BaseStore`` over Mnemo's
  ``DocumentService`` (``mnemo.integrations.langgraph.store``).
- ``MnemoSaver``: a checkpointer (``BaseCheckpointSaver``) over Mnemo's
  ``CheckpointService`` (``mnemo.integrations.langgraph.saver``).
"""

from mnemo.integrations.langgraph.saver import MnemoSaver
from mnemo.integrations.langgraph.store import MnemoStore

__all__ = ["MnemoSaver", "MnemoStore"]
