"""tests/peers run only in .venv-peers, where the peers' SDKs are installed
(``make test-openai-agents``: tests/peers/run_openai_agents.py with
tests/peers/pytest-peers.ini and ``openai_agents_plugin``, which starts the server
and gives the ``mnemo_target`` fixture). The project's own run (``.venv``,
without the SDKs) does not collect them. No ``__init__.py``: the modules here
import each other as top-level modules (tests/peers is on ``PYTHONPATH``), as
the plugin must be one in the SDK's run, whose ``tests`` package is the SDK's."""

from __future__ import annotations

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("agents") else ["*.py"]
