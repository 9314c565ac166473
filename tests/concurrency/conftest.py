"""The concurrency suite runs against the same real in-process servers as the
API tests (one per test, over ``database_url``, so on both backends); crash
and signal tests start their own ``mnemo serve`` processes
(tests/support/subprocess_server.py)."""

from __future__ import annotations

import pytest

from tests.api.conftest import (  # noqa: F401  (fixtures shared with tests/api)
    channel,
    conversations,
    governance,
    memories,
    server,
    working_memory,
)

# Plain asserts in the shared load checks report their operands, as in tests.
pytest.register_assert_rewrite("tests.concurrency.load")
