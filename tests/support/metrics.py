"""Scraping a server's metrics port (``--metrics-listen``) in tests."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

SCRAPE_TIMEOUT_S = 10.0


def parse(text: str) -> Samples:
    """Every sample of a Prometheus text exposition, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape_text(port: int, path: str = "/metrics") -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=SCRAPE_TIMEOUT_S) as r:
        body: bytes = r.read()
        return body.decode()


def scrape(port: int) -> Samples:
    """The samples the metrics port of ``port`` serves now."""
    return parse(scrape_text(port))


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name{labels}`` (0 when absent: a labelled counter not yet used)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def series(samples: Samples, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return {
        key: found for (sample, key), found in samples.items() if sample == name and wanted <= key
    }
