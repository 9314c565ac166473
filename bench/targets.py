"""The targets the figures are judged against, each a ratio from one run.

- writes (append, remember, save state, create memory): throughput at c1 at
  least 0.40 of the empty RPC's; at c16 at least 0.50 on SQLite, 0.40 on
  PostgreSQL;
- reads (get state, list messages, get memory): at c16 at least 0.70;
- server CPU per request (at c16, the level the throughput targets share):
  writes at most 2.5 times the empty RPC's, reads at most 1.5 times;
- Mnemo at c16 (SQLite) against the in-process peers at c16: create memory
  vs LangGraph ``SqliteStore.put`` and append vs ADK ``append_event`` at
  least 1x; append vs ``SQLiteSession.add_items`` at least 0.5x.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.ops import READS, WRITES


@dataclass(frozen=True)
class Verdict:
    what: str
    store: str
    concurrency: int
    measured: float | None
    spread: tuple[float, float] | None
    target: str
    met: bool | None


def _cell(cells: list[dict[str, Any]], op: str, concurrency: int) -> dict[str, Any] | None:
    return next((c for c in cells if c["op"] == op and c["concurrency"] == concurrency), None)


def _check(value: float, bound: float, at_least: bool) -> bool:
    return value >= bound if at_least else value <= bound


def _ratio_rows(
    store: str,
    cells: list[dict[str, Any]],
    ops: tuple[str, ...],
    concurrency: int,
    key: str,
    bound: float,
    at_least: bool,
    label: str,
) -> list[Verdict]:
    out = []
    for op in ops:
        cell = _cell(cells, op, concurrency)
        sign = ">=" if at_least else "<="
        if cell is None:
            out.append(
                Verdict(
                    f"{op}: {label}", store, concurrency, None, None, f"{sign} {bound:.2f}", None
                )
            )
            continue
        value = float(cell[key])
        spread = cell[f"{key}_spread"]
        out.append(
            Verdict(
                f"{op}: {label}",
                store,
                concurrency,
                value,
                (spread[0], spread[1]),
                f"{sign} {bound:.2f}",
                _check(value, bound, at_least),
            )
        )
    return out


def store_verdicts(store: str, cells: list[dict[str, Any]]) -> list[Verdict]:
    write_c16 = 0.50 if store == "sqlite" else 0.40
    return [
        *_ratio_rows(store, cells, WRITES, 1, "throughput_ratio", 0.40, True, "throughput / empty"),
        *_ratio_rows(
            store, cells, WRITES, 16, "throughput_ratio", write_c16, True, "throughput / empty"
        ),
        *_ratio_rows(store, cells, READS, 16, "throughput_ratio", 0.70, True, "throughput / empty"),
        *_ratio_rows(
            store, cells, WRITES, 16, "cpu_ratio", 2.5, False, "server CPU per call / empty's"
        ),
        *_ratio_rows(
            store, cells, READS, 16, "cpu_ratio", 1.5, False, "server CPU per call / empty's"
        ),
    ]


PEER_TARGETS = (
    ("create-memory", "LangGraph SqliteStore", "put", 1.0),
    ("append", "Google ADK DatabaseSessionService", "append_event", 1.0),
    ("append", "OpenAI Agents SQLiteSession", "add_items (1 item)", 0.5),
)


def peer_cell(
    reports: list[dict[str, Any]], peer: str, store: str, op: str, concurrency: int
) -> dict[str, Any] | None:
    for report in reports:
        if report["peer"] == peer and report["store"] == store:
            for cell in report["cells"]:
                if cell["op"] == op and cell["concurrency"] == concurrency:
                    found: dict[str, Any] = cell
                    return found
    return None


def peer_verdicts(
    mnemo_cells: list[dict[str, Any]], reports: list[dict[str, Any]]
) -> list[Verdict]:
    out = []
    for mnemo_op, peer, op, bound in PEER_TARGETS:
        what = f"Mnemo {mnemo_op} / {peer}.{op.split(' ')[0]}"
        mine = _cell(mnemo_cells, mnemo_op, 16)
        theirs = peer_cell(reports, peer, "sqlite", op, 16)
        if mine is None or theirs is None or not theirs["throughput"]:
            out.append(Verdict(what, "sqlite", 16, None, None, f">= {bound:.1f}x", None))
            continue
        value = mine["throughput"] / theirs["throughput"]
        low = mine["throughput_spread"][0] / theirs["throughput_spread"][1]
        high = mine["throughput_spread"][1] / theirs["throughput_spread"][0]
        out.append(
            Verdict(what, "sqlite", 16, value, (low, high), f">= {bound:.1f}x", value >= bound)
        )
    return out
