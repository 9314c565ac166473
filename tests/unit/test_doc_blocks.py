"""Docs that cannot rot: every code block of README.md, docs/clients/ and
docs/integrations/ is run by a test, or says it is a fragment.

The convention (docs/README.md, "Developing"):

- a Python, TypeScript, Go or Kotlin block is **run** by a test (``RUN_PAGES``:
  a runner that executes the page's blocks of that language against a live
  server; ``SHOWN_FILES``: a block that is a whole file, shown as it is, which
  its test compares with the page and runs), or its first line is a comment
  ``# fragment: <why>`` / ``// fragment: <why>``, visible to the reader;
- a shell block's ``mnemo`` (and ``mnemo-mcp``) command lines parse with
  the CLI's own parser and its ``make`` targets exist (what they do is tested elsewhere);
- ``text``, ``json``, ``yaml`` and unlabelled blocks are output, data or
  configuration, not code.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from mnemo.integrations import mcp_command
from mnemo_server.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs" / "clients").glob("*.md")),
    *sorted((ROOT / "docs" / "integrations").glob("*.md")),
]
CODE = {"python", "ts", "go", "kotlin"}
NOT_CODE = {"text", "json", "yaml", ""}

# (page, language) -> the test that runs every block of that language on the page.
RUN_PAGES = {
    ("README.md", "python"): "tests/client/test_readme_tour.py",
    ("README.md", "ts"): "clients/typescript/test/readme-tour.test.ts",
    (
        "docs/integrations/langgraph.md",
        "python",
    ): "tests/peers/langgraph_checks/langgraph_store_checks.py",
}
# Files shown whole on a page; each one's test compares it with the page and runs it.
SHOWN_FILES = {
    "clients/go/examples/readme/main.go": "clients/go/examples/readme/main_test.go",
    "clients/go/examples/tour/main.go": "clients/go/examples/tour/main_test.go",
    "clients/kotlin/src/test/kotlin/mnemo/example/readme/ReadmeTour.kt": (
        "clients/kotlin/src/test/kotlin/mnemo/client/ReadmeTourTest.kt"
    ),
}
_BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
_FRAGMENT = re.compile(r"^(#|//) fragment: \S")


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(page.read_text())]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_code_block_is_run_or_says_it_is_a_fragment(page: Path) -> None:
    shown = {(ROOT / f).read_text() for f in SHOWN_FILES}
    problems = []
    for number, (language, body) in enumerate(_blocks(page), start=1):
        if language in NOT_CODE or language == "sh":
            continue
        assert language in CODE, f"{_name(page)} block {number}: unknown language {language!r}"
        if (_name(page), language) in RUN_PAGES or body in shown:
            continue
        if not _FRAGMENT.match(body):
            problems.append(f"{_name(page)} block {number} ({language}): {body.splitlines()[0]!r}")
    assert not problems, "neither run nor marked '# fragment: <why>':\n" + "\n".join(problems)


def test_the_runners_exist_and_name_what_they_run() -> None:
    for (page, _), runner in RUN_PAGES.items():
        text = (ROOT / runner).read_text()
        assert Path(page).name in text, f"{runner} does not name {page}"
    for shown, runner in SHOWN_FILES.items():
        assert (ROOT / shown).is_file()
        assert Path(shown).name in (ROOT / runner).read_text(), f"{runner} does not name {shown}"


def _make_targets() -> set[str]:
    listed = subprocess.run(
        ["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return {line.split()[0] for line in listed.splitlines() if line.startswith("  ")}


def _commands(body: str) -> list[list[str]]:
    """Each simple command of the block's lines (``&&``, ``;``, ``|`` and a
    trailing ``&`` split them; ``VAR=value`` prefixes and comments go)."""
    commands = []
    for line in body.splitlines():
        line = line.split("  #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"&&|\|\||;|\|", line):
            words = shlex.split(part.strip().rstrip("&").strip())
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]
            if words:
                commands.append(words)
    return commands


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_shell_blocks_name_real_commands(page: Path) -> None:
    targets = _make_targets()
    parsers = {"mnemo": build_parser(), "mnemo-mcp": mcp_command.build_parser()}
    for language, body in _blocks(page):
        if language != "sh":
            continue
        for words in _commands(body):
            program = Path(words[0]).name
            if program == "make":
                for target in (w for w in words[1:] if "=" not in w and not w.startswith("-")):
                    assert target in targets, f"{_name(page)}: make {target}: no such target"
            elif program in parsers:
                try:
                    parsers[program].parse_args(words[1:])
                except SystemExit as refused:
                    raise AssertionError(f"{_name(page)}: {' '.join(words)}: refused") from refused
