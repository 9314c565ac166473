"""The README's five-minute tour runs as written against a real server and
prints exactly what the README shows after it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from tests.support.readme_tour import tour_code, tour_output
from tests.support.server import running_server


def test_readme_tour_runs_and_prints_what_it_promises(tmp_path: Path) -> None:
    code = tour_code("python")
    assert "127.0.0.1:50051" in code
    output = io.StringIO()
    # A server as `make run` starts it: with the default embedder.
    with running_server(f"sqlite:///{tmp_path / 'mnemo.db'}", embedder="local") as target:
        with contextlib.redirect_stdout(output):
            exec(compile(code.replace("127.0.0.1:50051", target), "README.md", "exec"), {})
    assert output.getvalue().splitlines() == tour_output("python")
