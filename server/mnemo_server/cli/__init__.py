"""The ``mnemo`` command: ``serve``, ``migrate``, ``export`` / ``import``, ``mcp`` and the
other subcommands (``main`` dispatches)."""
