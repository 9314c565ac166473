"""``--log-format json``: one JSON object per line on stderr.

Every line has ``time`` (UTC, ISO 8601 with milliseconds), ``level``,
``logger`` and ``message``; a logged exception adds ``exception`` (its
traceback as text). An access log line (``mnemo.access``, one per call:
``observability.interceptor``) adds ``method``, ``code``, ``duration_ms``
and ``user``. Nothing a caller sent is logged: no message text, no memory
text, no token.

Every log handler of the server also carries ``RedactingFilter``: whatever a
line says, credentials in it are replaced (``domain.redaction``), so that an
embedding provider that echoes the API key in an error, or a library that
prints a header, never puts a key into the log.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from mnemo_server.domain.redaction import redact

__all__ = ["ACCESS_FIELDS", "JsonFormatter", "RedactingFilter"]

ACCESS_FIELDS = ("method", "code", "duration_ms", "user")


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in ACCESS_FIELDS:
            if field in record.__dict__:
                line[field] = record.__dict__[field]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class RedactingFilter(logging.Filter):
    """Replaces credentials in a record's message and traceback
    (``domain.redaction.redact``); drops nothing."""

    def __init__(self) -> None:
        super().__init__()
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
