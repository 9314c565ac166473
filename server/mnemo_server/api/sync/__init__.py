"""SyncService: the change feed, listed or watched (servicer, conversions)."""
