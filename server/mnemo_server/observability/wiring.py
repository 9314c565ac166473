"""What one server observes, built from its settings: metrics, tracing, the
access log, and the interceptors and the ``Observer`` that report to them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from mnemo_server.domain.observe import Observer
from mnemo_server.observability.interceptor import ObservingInterceptor
from mnemo_server.observability.metrics import Metrics
from mnemo_server.observability.observer import combined
from mnemo_server.observability.tracing import Tracing, otlp_provider

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["Observability"]


@dataclass
class Observability:
    """``metrics`` (``None``: no metrics port), ``tracing`` (``None``: off),
    ``access_log`` (an access log line per call) and whether the server
    made the tracer provider (then it shuts it down at stop)."""

    metrics: Metrics | None = None
    tracing: Tracing | None = None
    access_log: bool = False
    owns_provider: bool = False

    @classmethod
    def build(
        cls,
        *,
        metrics: bool,
        tracing: str,
        access_log: bool,
        tracer_provider: TracerProvider | None = None,
    ) -> Observability:
        """From the settings' values: ``tracing`` ``"otlp"`` makes an OTLP
        provider unless ``tracer_provider`` is given (which turns tracing on
        by itself). Raises ``TracingUnavailable`` without OpenTelemetry."""
        owns = False
        if tracer_provider is None and tracing == "otlp":
            tracer_provider, owns = otlp_provider(), True
        return cls(
            metrics=Metrics() if metrics else None,
            tracing=Tracing(tracer_provider) if tracer_provider is not None else None,
            access_log=access_log,
            owns_provider=owns,
        )

    @property
    def observer(self) -> Observer:
        return combined([self.metrics, self.tracing])

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:  # type: ignore[type-arg]
        """The interceptors to install first, outermost first."""
        found: list[grpc.aio.ServerInterceptor] = []  # type: ignore[type-arg]
        if self.tracing is not None:
            found.append(self.tracing.interceptor())
        if self.metrics is not None or self.access_log:
            found.append(ObservingInterceptor(self.metrics, access_log=self.access_log))
        return found

    async def close(self) -> None:
        """Export the pending spans and stop a tracer provider the server
        made (in a thread: an unreachable collector holds it up to the
        exporter's timeout, ``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s by default)."""
        if self.tracing is not None and self.owns_provider:
            await asyncio.to_thread(self.tracing.shutdown)
