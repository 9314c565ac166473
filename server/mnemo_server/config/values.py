"""Parsers of one flag or environment value, each raising ``ValueError`` with
what the value must be (``config.options`` names the flag and variable)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TypeVar

from mnemo_server.domain.embedding import check_spec

N = TypeVar("N", int, float)


def _number_where(
    convert: Callable[[str], N], holds: Callable[[N], bool], otherwise: str
) -> Callable[[str], N]:
    """A parser of numbers that ``convert`` reads and ``holds`` accepts;
    ``otherwise`` says what the value must be."""

    def parse(text: str) -> N:
        value = convert(text)
        if not holds(value):
            raise ValueError(otherwise)
        return value

    return parse


positive_int = _number_where(int, lambda value: value >= 1, "must be at least 1")
non_negative_int = _number_where(int, lambda value: value >= 0, "must not be negative")
unit_interval = _number_where(
    float, lambda value: 0.0 < value <= 1.0, "must be above 0 and at most 1"
)
relevance = _number_where(float, lambda value: 0.0 <= value <= 1.0, "must be from 0 to 1")


def non_empty(text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("must not be negative")
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value == 0:
        raise ValueError("must be more than 0")
    return value


def true_or_false(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def choice(*allowed: str, upper: bool = False) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().upper() if upper else text.strip()
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value

    return parse


def embedder_url(text: str) -> str:
    if not re.fullmatch(r"https?://[^/\s]+(/\S*)?", text.strip()):
        raise ValueError(f"{text!r} is not an http(s) URL, as https://api.openai.com/v1")
    return text.strip()


def embedder_spec(text: str) -> str:
    """An embedder spec of a known form (``EmbedderConfigError`` is a
    ``ValueError``); whether it loads is found at start."""
    return check_spec(text)


def listen_address(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("must be HOST:PORT, for example 127.0.0.1:50051 or [::]:50051")
    return text


def optional_listen_address(text: str) -> str:
    return listen_address(text.strip()) if text.strip() else ""


_ORIGIN = re.compile(r"https?://[^/\s,]+")


_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?")


def host_names(text: str) -> tuple[str, ...]:
    hosts = tuple(part.strip().lower().rstrip(".") for part in text.split(",") if part.strip())
    for host in hosts:
        if not _HOST.fullmatch(host):
            raise ValueError(
                f"{host!r} is not a host name: give names like mnemo.example.com or "
                "mnemo.example.com:8443, comma-separated, without a scheme"
            )
    return hosts


def cors_origins(text: str) -> tuple[str, ...]:
    origins = tuple(part.strip().rstrip("/") for part in text.split(",") if part.strip())
    for origin in origins:
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"{origin!r} is not an origin: give * or origins like https://app.example.com "
                "or http://127.0.0.1:5173, comma-separated"
            )
    return origins
