"""The README's five-minute tour, read as a test needs it: each language's
block and the output the README shows after it ("... prints:")."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"

__all__ = ["README", "tour_code", "tour_output"]


def _tour() -> str:
    text = README.read_text()
    return text[text.index("## A five-minute tour") :]


def tour_code(language: str) -> str:
    """The tour's first block of ``language`` (``python``, ``ts``)."""
    match = re.search(rf"```{language}\n(.*?)```", _tour(), re.DOTALL)
    assert match, f"the README tour has no {language} block"
    return match.group(1)


def tour_output(language: str) -> list[str]:
    """The lines of the text block after the tour's ``language`` block."""
    match = re.search(
        rf"```{language}\n.*?```\n\n[^\n]*prints[^\n]*:\n\n```text\n(.*?)```", _tour(), re.DOTALL
    )
    assert match, f"the README shows no output after the {language} tour"
    return match.group(1).splitlines()
