"""OpenTelemetry tracing (``--tracing otlp``; the ``otel`` extra): a span for
every RPC and one for every store transaction, the RPC's span its parent.

The RPC spans come from ``opentelemetry-instrumentation-grpc``'s server
interceptor (installed first, outermost). The store spans are made here, as
a ``domain.observe.Observer``: each operation queued for the store keeps
the trace context of the call that queued it (``queued``); when its
transaction ends, the lane thread records a span ``mnemo.store.read`` or
``mnemo.store.write`` under that context with the transaction's start and
end, and the batch's size (``mnemo.store.batch_operations``): operations that
shared one transaction (group commit) each get a span of it under their own
call. A deferred write (an analytics event a read records) has no caller
and no span.

OpenTelemetry is imported only when tracing is configured; without the
extra installed, ``--tracing otlp`` fails at start with the command that
installs it.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from mnemo_server.domain.observe import NoObserver, Transaction

if TYPE_CHECKING:
    import grpc
    from opentelemetry.trace import TracerProvider

__all__ = ["Tracing", "TracingUnavailable", "otlp_provider"]

SERVICE_NAME = "mnemo"
_INSTALL = "pip install 'mnemo-server[otel]'"


class TracingUnavailable(ValueError):
    """Tracing is configured but OpenTelemetry is not installed."""


def otlp_provider() -> TracerProvider:
    """A tracer provider exporting in batches over OTLP/gRPC, configured by
    the standard ``OTEL_EXPORTER_OTLP_*`` variables (endpoint, headers,
    certificates; default ``localhost:4317``). Raises ``TracingUnavailable``."""
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as missing:
        raise TracingUnavailable(
            f"--tracing otlp needs OpenTelemetry ({missing.name} is missing): {_INSTALL}"
        ) from None
    provider = SdkTracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class Tracing(NoObserver):
    """Spans of RPCs and store transactions from ``provider`` (the other
    reports are the metrics')."""

    def __init__(self, provider: TracerProvider, dialect: str = "") -> None:
        try:
            from opentelemetry import context, trace
        except ImportError as missing:
            raise TracingUnavailable(
                f"tracing needs OpenTelemetry ({missing.name} is missing): {_INSTALL}"
            ) from None
        self.provider = provider
        self._current = context.get_current
        self._tracer = provider.get_tracer("mnemo_server")
        self._internal = trace.SpanKind.INTERNAL
        self.dialect = dialect

    def interceptor(self) -> grpc.aio.ServerInterceptor:  # type: ignore[type-arg]
        """The server span of every call (the outermost interceptor).

        The instrumentation iterates every response-streaming behavior, but
        a writer-style one (a coroutine calling ``context.write``, as
        ``WatchChanges``) is no iterator: it would fail with a ``TypeError``.
        Such a behavior gets the instrumentation's unary wrapper instead,
        which awaits it (the span is the same).
        """
        from opentelemetry.instrumentation.grpc import aio_server_interceptor

        interceptor: Any = aio_server_interceptor(tracer_provider=self.provider)  # type: ignore[no-untyped-call]
        stream = interceptor._intercept_aio_server_stream
        unary = interceptor._intercept_aio_server_unary

        def either(behavior: Any, details: Any) -> Any:
            if inspect.isasyncgenfunction(behavior):
                return stream(behavior, details)
            return unary(behavior, details)

        interceptor._intercept_aio_server_stream = either
        chosen: grpc.aio.ServerInterceptor = interceptor  # type: ignore[type-arg]
        return chosen

    def shutdown(self) -> None:
        """Export what is pending and stop (a provider this server made)."""
        shutdown = getattr(self.provider, "shutdown", None)
        if shutdown is not None:
            shutdown()

    # ------------------------------------------- domain.observe.Observer

    def queued(self) -> object:
        return self._current()

    def transaction(self, done: Transaction) -> None:
        attributes: dict[str, Any] = {"mnemo.store.batch_operations": len(done.queued)}
        if self.dialect:
            attributes["db.system.name"] = self.dialect
        for parent in done.queued:
            if parent is None:
                continue
            span = self._tracer.start_span(
                f"mnemo.store.{done.kind}",
                context=parent,  # type: ignore[arg-type]
                kind=self._internal,
                start_time=done.started_ns,
                attributes=attributes,
            )
            span.end(end_time=done.ended_ns)
