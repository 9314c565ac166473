"""The code blocks of a Markdown page, run as a reader runs them: every
```python block in order, in one namespace (a later block may use what an
earlier one defined), and each ``print(...)`` checked against the output its
comment shows.

The convention: a comment after a ``print(...)`` call (on its line, or
alone on the next line) shows what it prints; the printed line must be where
the comment starts (it may go on to explain, after the output). A block
whose first line is ``# fragment`` is not run (it shows a piece, not a
program).
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["expected_prints", "python_blocks", "run_blocks"]

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_PRINT = re.compile(r"^\s*print\(")
_COMMENT = re.compile(r"#\s?(.*)$")


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order, fragments left out."""
    return [b for b in _BLOCK.findall(page.read_text()) if not b.startswith("# fragment")]


def expected_prints(block: str) -> list[str]:
    """What the block's ``print`` calls show, in order (see the module doc)."""
    lines = block.splitlines()
    shown = []
    for i, line in enumerate(lines):
        if not _PRINT.match(line):
            continue
        code, _, comment = line.partition("  # ")
        if comment:
            shown.append(comment)
        elif i + 1 < len(lines) and lines[i + 1].strip().startswith("#"):
            shown.append(lines[i + 1].strip().removeprefix("#").strip())
    return shown


def run_blocks(page: Path, replacements: Mapping[str, str]) -> list[str]:
    """Run the page's blocks (with ``replacements`` applied to their text:
    the server's address, the users); raise ``AssertionError`` when a
    printed line is not what its comment shows. Returns what was printed."""
    namespace: dict[str, object] = {"__name__": "__doc_blocks__"}
    printed: list[str] = []
    for number, block in enumerate(python_blocks(page), start=1):
        source = block
        for old, new in replacements.items():
            source = source.replace(old, new)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(source, f"{page.name} block {number}", "exec"), namespace)
        lines = out.getvalue().splitlines()
        shown = expected_prints(block)
        assert len(lines) == len(shown), (page.name, number, lines, shown)
        for line, comment in zip(lines, shown, strict=True):
            assert comment.startswith(line), (
                f"{page.name} block {number}: printed {line!r}, shows {comment!r}"
            )
        printed += lines
    return printed
