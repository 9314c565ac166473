"""What a Dockerfile's final stage says about starting the container: its
``ENV``, ``CMD``, ``HEALTHCHECK`` command, ``USER``, ``VOLUME`` and
``STOPSIGNAL``, read as Docker reads them (continuation lines joined, JSON
forms of ``CMD`` and ``HEALTHCHECK ... CMD``). Enough to run the same start-up
outside a container (``tests/dist/installed.py``)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FinalStage", "final_stage"]


@dataclass
class FinalStage:
    env: dict[str, str] = field(default_factory=dict)
    cmd: list[str] = field(default_factory=list)
    healthcheck: list[str] = field(default_factory=list)
    user: str = ""
    volumes: list[str] = field(default_factory=list)
    stop_signal: str = ""


def _instructions(text: str) -> list[tuple[str, str]]:
    joined: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    return [(line.split(None, 1)[0].upper(), (line.split(None, 1) + [""])[1]) for line in joined]


def final_stage(path: Path) -> FinalStage:
    """The final stage of the Dockerfile at ``path``."""
    stage = FinalStage()
    for keyword, rest in _instructions(path.read_text()):
        if keyword == "FROM":
            stage = FinalStage()
        elif keyword == "ENV":
            for pair in shlex.split(rest):
                name, _, value = pair.partition("=")
                stage.env[name] = value
        elif keyword == "CMD":
            stage.cmd = json.loads(rest)
        elif keyword == "HEALTHCHECK":
            stage.healthcheck = json.loads(rest[rest.index("CMD") + 3 :])
        elif keyword == "USER":
            stage.user = rest.strip()
        elif keyword == "VOLUME":
            stage.volumes = json.loads(rest)
        elif keyword == "STOPSIGNAL":
            stage.stop_signal = rest.strip()
    return stage
