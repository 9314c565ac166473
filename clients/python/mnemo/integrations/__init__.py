"""Mnemo behind the interfaces of agent frameworks and protocols, each an
optional extra of ``mnemo-client`` (``mcp``: ``pip install 'mnemo-client[mcp]'``).

Importing ``mnemo.integrations`` imports no framework; each subpackage needs its own.
"""
