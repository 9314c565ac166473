"""Timed windows against running servers, driven from this process.

``Loadgens`` starts one or more ``bench.loadgen`` processes (the workers split
between them), and ``window`` runs one measured window of one operation: it
tells every generator the window's bounds on the shared monotonic clock,
reads the servers' CPU time at the window's start and end, and merges what
the generators report into a ``Sample``. ``Cell`` gathers the samples of one
(operation, concurrency) and gives medians and spreads.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any, Self

from bench.servers import ROOT, cpu_seconds

READY_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Sample:
    """One measured window."""

    op: str
    seconds: float
    calls: int
    errors: int
    p50_ms: float
    p99_ms: float
    server_cpu_s: float
    loadgen_cpu_s: float
    little_throughput: float
    first_error: str | None = None

    @property
    def throughput(self) -> float:
        """Calls/s by Little's law (workers ÷ mean latency of the window's calls):
        a closed loop's exact rate, also when a call takes longer than the window."""
        return self.little_throughput

    @property
    def counted_throughput(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_call(self) -> float:
        """Server CPU seconds per second of window ÷ calls per second."""
        if not self.seconds or not self.throughput:
            return float("nan")
        return 1000 * self.server_cpu_s / self.seconds / self.throughput


def _sample_json(sample: Sample) -> dict[str, Any]:
    return sample.__dict__ | {
        "throughput": sample.throughput,
        "counted_throughput": sample.counted_throughput,
        "cpu_ms_per_call": sample.cpu_ms_per_call,
    }


def _spread(values: Sequence[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (float("nan"), float("nan"))


@dataclass
class Cell:
    """The samples of one operation at one concurrency, with the baseline
    sample measured just before each of them (``baselines[i]`` pairs ``samples[i]``)."""

    op: str
    concurrency: int
    samples: list[Sample] = field(default_factory=list)
    baselines: list[Sample] = field(default_factory=list)

    def median(self, attribute: str) -> float:
        values = [float(getattr(s, attribute)) for s in self.samples]
        return statistics.median(values) if values else float("nan")

    def spread(self, attribute: str) -> tuple[float, float]:
        return _spread([float(getattr(s, attribute)) for s in self.samples])

    def ratios(self, attribute: str) -> list[float]:
        """Per pair: this op's value over its baseline's."""
        out = []
        for sample, base in zip(self.samples, self.baselines, strict=True):
            num, den = float(getattr(sample, attribute)), float(getattr(base, attribute))
            out.append(num / den if den else float("nan"))
        return out

    def ratio(self, attribute: str) -> float:
        values = self.ratios(attribute)
        return statistics.median(values) if values else float("nan")

    def ratio_spread(self, attribute: str) -> tuple[float, float]:
        return _spread(self.ratios(attribute))

    @property
    def errors(self) -> int:
        return sum(s.errors for s in self.samples)

    def as_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "concurrency": self.concurrency,
            "throughput": self.median("throughput"),
            "throughput_spread": self.spread("throughput"),
            "cpu_ms_per_call": self.median("cpu_ms_per_call"),
            "cpu_ms_per_call_spread": self.spread("cpu_ms_per_call"),
            "p50_ms": self.median("p50_ms"),
            "p99_ms": self.median("p99_ms"),
            "throughput_ratio": self.ratio("throughput"),
            "throughput_ratio_spread": self.ratio_spread("throughput"),
            "cpu_ratio": self.ratio("cpu_ms_per_call"),
            "cpu_ratio_spread": self.ratio_spread("cpu_ms_per_call"),
            "errors": self.errors,
            "samples": [_sample_json(s) for s in self.samples],
            "baselines": [_sample_json(s) for s in self.baselines],
        }


class Loadgens:
    """``processes`` load-generator processes with ``concurrency`` workers in all."""

    def __init__(
        self,
        targets: Sequence[str],
        concurrency: int,
        ops: Sequence[str],
        processes: int = 1,
        data_users: int = 16,
        run: str = "r",
    ) -> None:
        self.concurrency = concurrency
        self.processes: list[subprocess.Popen[str]] = []
        per = [
            concurrency // processes + (1 if i < concurrency % processes else 0)
            for i in range(processes)
        ]
        first = 0
        for index, workers in enumerate(per):
            self.processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "bench.loadgen",
                        "--targets",
                        ",".join(targets),
                        "--workers",
                        str(workers),
                        "--first-worker",
                        str(first),
                        "--ops",
                        ",".join(ops),
                        "--data-users",
                        str(data_users),
                        "--run",
                        f"{run}p{index}",
                    ],
                    cwd=ROOT,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    bufsize=1,
                )
            )
            first += workers
        for process in self.processes:
            reply = self._read(process)
            if not reply.get("ready"):
                raise RuntimeError(f"load generator not ready: {reply}")

    @staticmethod
    def _read(process: subprocess.Popen[str]) -> dict[str, Any]:
        stdout: IO[str] | None = process.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"load generator {process.pid} exited ({process.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _send(self, command: dict[str, Any]) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write(json.dumps(command) + "\n")
            process.stdin.flush()

    def _all(self, key: str) -> list[dict[str, Any]]:
        replies = [self._read(process) for process in self.processes]
        for reply in replies:
            if key not in reply:
                raise RuntimeError(f"load generator answered {reply}, expected {key!r}")
        return replies

    def window(
        self,
        op: str,
        server_pids: Sequence[int],
        seconds: float,
        warmup: float,
        targets: Sequence[int] = (0,),
    ) -> Sample:
        """One window of ``op``: a warm-up until every worker has completed a
        call (at least ``warmup`` s), then at least ``seconds`` measured, until
        every worker has completed a call within it; the servers' CPU time is
        read at the measured window's start and end."""
        self._send({"op": op, "warmup": warmup, "seconds": seconds, "targets": list(targets)})
        self._all("warm")
        cpu_start = sum(cpu_seconds(pid) for pid in server_pids)
        started = time.monotonic()
        self._send({"measure": True})
        self._all("satisfied")
        cpu_end = sum(cpu_seconds(pid) for pid in server_pids)
        elapsed = time.monotonic() - started
        self._send({"stop": True})
        replies = self._all("calls")
        first_error = next((r["first_error"] for r in replies if r["first_error"]), None)
        calls = sum(int(r["calls"]) for r in replies)
        throughput = sum(float(r["throughput"]) for r in replies)
        weight = max(calls, 1)
        return Sample(
            op=op,
            seconds=elapsed,
            calls=calls,
            errors=sum(int(r["errors"]) for r in replies),
            p50_ms=sum(r["p50_ms"] * r["calls"] for r in replies) / weight,
            p99_ms=max(r["p99_ms"] for r in replies),
            server_cpu_s=cpu_end - cpu_start,
            loadgen_cpu_s=sum(r["loadgen_cpu_s"] for r in replies),
            little_throughput=throughput,
            first_error=first_error,
        )

    def close(self) -> None:
        for process in self.processes:
            with contextlib.suppress(OSError, ValueError):
                assert process.stdin is not None
                process.stdin.write(json.dumps({"quit": True}) + "\n")
                process.stdin.close()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
