"""``make relevance``: how well RecallMemories ranks the hand-written relevance
set (tests/relevance/memories.json and queries.json; docs/relevance.md).

For each backend: a fresh migrated database (``bench.servers.Databases``: a
SQLite file; a database in a throwaway PostgreSQL cluster), a real ``mnemo
serve`` process with the static-model embedder (``MNEMO_EMBEDDER``, the
environment form of ``--embedder local``), the set saved through the
public client (CreateMemory, UpdateMemory, DeleteMemory), every query run
lexical and semantic (``tests.support.relevance``). Prints, per backend, the
table of recall@5 and nDCG@10 (overall and per tag, both modes) with the
forbidden hits, then the worst queries of each mode.

    python bench/relevance.py [--backends sqlite,postgres] [--worst 10]
                              [--markdown FILE] [--json FILE] [--thresholds FILE]

``--thresholds FILE`` writes the overall figures (of the first backend),
rounded down to 3 decimals, with the commit that measured them: the content of
tests/relevance/thresholds.json. Exits with 1 when a forbidden entry came back
or the backends ranked differently.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.servers import Databases, serve  # noqa: E402
from mnemo.client import MnemoClient  # noqa: E402
from tests.support.embedding import wait_until_embedded  # noqa: E402
from tests.support.relevance import (  # noqa: E402
    METRICS,
    MODES,
    TAGS,
    Figures,
    Rankings,
    RelevanceSet,
    Report,
    ranked_names,
    read_set,
    run_queries,
    save_set,
    score,
    thresholds_of,
)

EMBEDDER = "local"


@dataclass(frozen=True)
class Run:
    """What one backend returned, and how long saving and querying took."""

    rankings: Rankings
    save_seconds: float
    query_seconds: float


def _measure(databases: Databases, backend: str, relevance_set: RelevanceSet) -> Run:
    url = databases.fresh(backend)
    with serve(url, extra_env={"MNEMO_EMBEDDER": EMBEDDER}) as server:
        with MnemoClient(server.target, timeout=60) as client:
            started = time.monotonic()
            save_set(client, relevance_set)
            wait_until_embedded(url)  # the vectors are computed in the background
            saved = time.monotonic()
            rankings = run_queries(client, relevance_set)
            done = time.monotonic()
    return Run(rankings, saved - started, done - saved)


def _cell(figures: Figures, name: str) -> str:
    return f"{figures.metric(name):.3f}" if figures.queries else "-"


def table(report: Report) -> str:
    """Markdown: one row per slice (overall, then each tag), both modes."""
    header = ["slice", "queries"]
    header += [f"{mode} {name}" for mode in MODES for name in METRICS]
    header += ["forbidden hits"]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for slice_name in ("overall", *TAGS):
        row = [f"**{slice_name}**" if slice_name == "overall" else slice_name]
        per_mode = [
            report.figures(m).overall
            if slice_name == "overall"
            else report.figures(m).by_tag[slice_name]
            for m in MODES
        ]
        first = per_mode[0]
        row.append(f"{first.queries} ({first.all_queries})")
        row += [_cell(f, name) for f in per_mode for name in METRICS]
        row.append(" / ".join(str(f.forbidden_hits) for f in per_mode))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def worst_table(report: Report, relevance_set: RelevanceSet, count: int) -> str:
    """Markdown: the ``count`` judged queries of each mode with the lowest nDCG@10."""
    zero = {m: sum(1 for s in report.scores if s.mode == m and s.ndcg == 0.0) for m in MODES}
    lines = [
        "Judged queries with nDCG@10 = 0 (none of their relevant entries in the first 10): "
        + ", ".join(f"{m} {n}" for m, n in zero.items())
        + ".",
        "",
        "| mode | query | tags | nDCG@10 | recall@5 | text | first hits |",
        "|---|---|---|---:|---:|---|---|",
    ]
    for mode in MODES:
        for s in report.worst(mode, count):
            first = ", ".join(s.returned[:3]) or "(nothing)"
            lines.append(
                f"| {mode} | {s.query.query_id} | {', '.join(s.query.tags)} | {s.ndcg:.3f} "
                f"| {s.recall:.2f} | {s.query.text} | {first} |"
            )
    return "\n".join(lines)


def _figures_json(report: Report) -> dict[str, Any]:
    return {
        mode: {
            "overall": asdict(report.figures(mode).overall),
            "by_tag": {t: asdict(f) for t, f in report.figures(mode).by_tag.items()},
        }
        for mode in MODES
    }


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()

    commit = git("rev-parse", "--short=12", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return f"{commit} plus uncommitted changes" if dirty else commit


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--backends", default="sqlite", help="sqlite, postgres or both")
    parser.add_argument("--worst", type=int, default=10, help="worst queries listed per mode")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--thresholds", type=Path, help="write thresholds.json content here")
    args = parser.parse_args()
    backends = args.backends.split(",")
    relevance_set = read_set()

    runs: dict[str, Run] = {}
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for backend in backends:
            runs[backend] = _measure(databases, backend, relevance_set)
    commit = _commit()
    reports = {b: score(relevance_set, run.rankings) for b, run in runs.items()}
    names = {b: ranked_names(run.rankings) for b, run in runs.items()}
    identical = all(names[b] == names[backends[0]] for b in backends)

    sections = [
        f"Relevance set: {len(relevance_set.entries)} memories of "
        f"{len(relevance_set.users())} users, {len(relevance_set.queries)} queries; "
        f"embedder {EMBEDDER}; commit {commit}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
    ]
    for backend, report in reports.items():
        run = runs[backend]
        sections.append(
            f"### {backend}\n\nSaved in {run.save_seconds:.1f} s, "
            f"{2 * len(relevance_set.queries)} recalls in {run.query_seconds:.1f} s. "
            "Queries: those with relevant entries (all, for forbidden hits).\n\n" + table(report)
        )
    if len(backends) > 1:
        sections.append(
            "The backends ranked every query identically."
            if identical
            else "THE BACKENDS RANKED DIFFERENTLY (tests/relevance/test_relevance.py shows where)."
        )
    first = reports[backends[0]]
    sections.append(
        f"### Worst queries ({backends[0]})\n\n" + worst_table(first, relevance_set, args.worst)
    )
    forbidden = [hit for report in reports.values() for hit in report.forbidden_hits()]
    if forbidden:
        sections.append(
            "### Forbidden hits\n\n"
            + "\n".join(
                f"- {h.mode} {h.query_id} #{h.rank}: {h.name} ({h.reason})" for h in forbidden
            )
        )
    text = "\n\n".join(sections) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        document = {
            "commit": commit,
            "embedder": EMBEDDER,
            "identical_across_backends": identical,
            "backends": {
                b: {
                    "save_seconds": runs[b].save_seconds,
                    "query_seconds": runs[b].query_seconds,
                    "figures": _figures_json(r),
                    "forbidden_hits": [asdict(h) for h in r.forbidden_hits()],
                    "rankings": names[b],
                }
                for b, r in reports.items()
            },
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    if args.thresholds:
        comment = (
            f"Overall figures of the ranking at commit {commit}, measured by "
            f"`python bench/relevance.py` on {', '.join(backends)} "
            f"({time.strftime('%Y-%m-%d', time.gmtime())}), rounded down to 3 decimals. "
            "tests/relevance/test_relevance.py fails when a figure drops below them; "
            "a change that raises one should record the new figures "
            '(`make relevance ARGS="--thresholds tests/relevance/thresholds.json"`).'
        )
        args.thresholds.write_text(json.dumps(thresholds_of(first, comment), indent=2) + "\n")
    return 1 if forbidden or not identical else 0


if __name__ == "__main__":
    sys.exit(main())
