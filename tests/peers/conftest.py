"""tests/peers run only in .venv-peers, where the peers' SDKs are installed
(``make test-openai-agents``, via tests/peers/run_openai_agents.py); the
project's own run (``.venv``, without them) does not collect them."""

from __future__ import annotations

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("agents") else ["*.py"]
