"""Small builders of domain values for the storage suite."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from mnemo_server.domain.models import Exchange, Idempotency, NewMessage

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def message(text: str, role: str = "user") -> NewMessage:
    """An Anvia-shaped message with odd spacing and non-ASCII text, which
    must come back byte for byte."""
    content = json.dumps(text, ensure_ascii=False)
    raw = f'{{"role": "{role}",  "content":[{{"type":"text","text":{content}}}], "metadata":{{"k":"é"}}}}'

    return NewMessage(message_json=raw, role=role, text=text)


def messages(*texts: str) -> list[NewMessage]:
    return [message(text) for text in texts]


def exchange(n: int) -> Exchange:
    """The n-th exchange; its time is in another zone than UTC on purpose."""
    zone = timezone(timedelta(hours=5, minutes=30))
    return Exchange(
        ask=f"ask {n}", answer=f"answer {n}", at=(T0 + timedelta(minutes=n)).astimezone(zone)
    )


def idem(request_id: str, fingerprint: str = "fp-1", scope: str = "AppendMessages") -> Idempotency:
    return Idempotency(request_id=request_id, scope=scope, fingerprint=fingerprint)
