"""The README's five-minute tour runs as written against a real server and
prints exactly what the README shows after it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from tests.support.server import running_server

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


def test_readme_tour_runs_and_prints_what_it_promises(tmp_path: Path) -> None:
    code = _tour_code()
    assert "127.0.0.1:50051" in code
    output = io.StringIO()
    # A server as `make run` starts it: with the default embedder.
    with running_server(f"sqlite:///{tmp_path / 'mnemo.db'}", embedder="local") as target:
        with contextlib.redirect_stdout(output):
            exec(compile(code.replace("127.0.0.1:50051", target), "README.md", "exec"), {})
    assert output.getvalue().splitlines() == _shown_output()
