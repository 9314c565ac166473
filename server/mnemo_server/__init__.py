"""Mnemo: a gRPC memory service for AI assistants and agents."""

__version__ = "0.1.0"
