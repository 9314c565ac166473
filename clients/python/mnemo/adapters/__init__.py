"""The seed SDKs' memory interfaces, backed by Mnemo: swap an app's local memory in one line.

- ``mnemo.adapters.goliath``: ``mnemo_memory(client, user=...)``, goliath's
  per-conversation ``Memory`` factory (``load`` / ``save`` of ``MemoryState``).
- ``mnemo.adapters.anvia``: ``MnemoMemoryStore``, Anvia's ``MemoryStore``
  (``load``, ``append``, ``clear``, ``record_error``, ``inspector``,
  ``compaction``) and its save policies (``store.run(...)``).
- ``mnemo.adapters.gecx``: gecx-chat's server memory adapter and the hybrid
  adapter (a local SQLite cache kept in step through the change feed).

Each has a blocking form (over ``MnemoClient``) and an asyncio form (over
``AsyncMnemoClient``) that share every rule.
"""
