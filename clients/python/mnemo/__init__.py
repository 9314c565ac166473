"""Mnemo, the gRPC memory service: Python client.

``mnemo.client`` holds the facade (``MnemoClient``, ``AsyncMnemoClient``),
``mnemo.v1`` the generated messages and stubs. The names below are loaded on
first use, so ``import mnemo`` alone does not import gRPC.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemo.client import AsyncMnemoClient, MnemoClient, MnemoError

__all__ = ["AsyncMnemoClient", "MnemoClient", "MnemoError"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("mnemo.client"), name)
    raise AttributeError(f"module 'mnemo' has no attribute {name!r}")
