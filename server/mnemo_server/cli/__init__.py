"""The ``mnemo`` command: ``serve``, ``migrate``, ``export`` / ``import``, ``mcp`` and the
other subcommands (``main`` dispatches).

gRPC's C core logs through its own logger straight to stderr, at the level
``GRPC_VERBOSITY`` names, read once when ``grpc`` is first imported; left
unset, it logs at INFO, so every client that ends its connection with a
non-zero HTTP/2 error code (as Node's HTTP/2 clients do on close, the
TypeScript client's ``close()`` among them) leaves a line ``Got goaway [8]
err=UNAVAILABLE:GOAWAY received ...`` that reads like an error. The command
sets it to ERROR, gRPC's documented default, before anything imports
``grpc``: its errors still reach the log, its chatter does not. A
``GRPC_VERBOSITY`` set in the environment (DEBUG, INFO) is kept.
"""

import os

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
