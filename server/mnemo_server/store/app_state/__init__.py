"""App states (``domain.app_state``): a tenant-level table, ``app_states``."""
