"""Mnemo for LangGraph (``pip install 'mnemo-client[langgraph]'``):
``MnemoSaver``, a checkpointer (``BaseCheckpointSaver``)."""

from mnemo.integrations.langgraph.saver import MnemoSaver

__all__ = ["MnemoSaver"]
