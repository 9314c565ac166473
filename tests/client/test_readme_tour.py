"""The README's five-minute tour runs as written against a real server and
prints exactly what the README shows after it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _tour() -> str:
    text = README.read_text()
    return text[text.index("## A five-minute tour") :]


def _tour_code() -> str:
    match = re.search(r"```python\n(.*?)```", _tour(), re.DOTALL)
    assert match, "the README tour has no Python block"
    return match.group(1)


def _shown_output() -> list[str]:
    """The lines of the text block after the Python block ("it prints")."""
    match = re.search(
        r"```python\n.*?```\n\n[^\n]*prints:\n\n```text\n(.*?)```", _tour(), re.DOTALL
    )
    assert match, "the README shows no output after the Python tour"
    return match.group(1).splitlines()


def test_readme_tour_runs_and_prints_what_it_promises(mnemo_target: str) -> None:
    code = _tour_code()
    assert "127.0.0.1:50051" in code
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code.replace("127.0.0.1:50051", mnemo_target), "README.md", "exec"), {})
    assert output.getvalue().splitlines() == _shown_output()
