"""``--log-format json``: one JSON object per line on stderr.

Every line has ``time`` (UTC, ISO 8601 with milliseconds), ``level``,
``logger`` and ``message``; a logged exception adds ``exception`` (its
traceback as text). An access log line (``mnemo.access``, one per call:
``observability.interceptor``) adds ``method``, ``code``, ``duration_ms``
and ``user``. Nothing a caller sent is logged: no message text, no memory
text, no token.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

__all__ = ["ACCESS_FIELDS", "JsonFormatter"]

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
