"""What the store runs on: engines and URLs (``engines``), dialect differences (``dialect``),
prebuilt statements (``statements``), lanes of connections (``lanes``), which failures to
retry (``failures``), the pre-flight look at a database (``preflight``), waiting at start for a
PostgreSQL that is not up yet (``reachable``), emptying SQLite's WAL after a delete (``wal``)."""
