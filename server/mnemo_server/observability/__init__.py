"""Observability: Prometheus metrics (``--metrics-listen``), OpenTelemetry
tracing (``--tracing``) and structured logs (``--log-format json``); see
docs/operations.md, "Metrics, tracing and logs"."""
