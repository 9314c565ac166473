"""The README's five-minute tour runs as written against a real server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _tour_code() -> str:
    text = README.read_text()
    tour = text[text.index("## A five-minute tour") :]
    match = re.search(r"```python\n(.*?)```", tour, re.DOTALL)
    assert match, "the README tour has no Python block"
    return match.group(1)


def test_readme_tour_runs_and_prints_what_it_promises(mnemo_target: str) -> None:
    code = _tour_code()
    assert "127.0.0.1:50051" in code
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code.replace("127.0.0.1:50051", mnemo_target), "README.md", "exec"), {})
    printed = output.getvalue().splitlines()
    assert printed[0] == "['question 2', 'question 3', 'question 4']"
    assert printed[1] == "['question 1']"
    assert printed[2] == "StatusCode.ABORTED ETAG_MISMATCH"
    assert printed[3].startswith('0 user {"role":"user"')
    assert printed[4].startswith("1 assistant ")
    assert any("vegan" in line for line in printed[5:]), printed
