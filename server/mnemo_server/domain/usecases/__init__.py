"""Use cases: one per operation, over the store Protocols, with settings-driven policy."""
