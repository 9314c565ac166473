"""Adapters of Mnemo to agent runtimes (optional extras of ``mnemo-client``)."""
