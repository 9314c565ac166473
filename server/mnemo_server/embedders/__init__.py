"""Loading the server's embedder from its ``--embedder`` spec
(``domain.embedding`` documents the forms). The concrete embedders live here
(``hashing``, ``static_model``, the ONNX models ``onnx`` and ``packaged``,
``remote``); the domain only knows the ``Embedder`` protocol.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from mnemo_server.domain.embedding import Embedder, EmbedderConfigError, check_spec
from mnemo_server.embedders.hashing import HashingEmbedder

__all__ = ["RemoteOptions", "load_embedder"]


@dataclass(frozen=True)
class RemoteOptions:
    """The ``--embedder-*`` settings of an ``openai:MODEL`` embedder (``remote``)."""

    url: str = "https://api.openai.com/v1"
    key_file: Path | None = None
    dimensions: int = 0
    timeout_seconds: float = 30.0


def load_embedder(
    spec: str | None, *, threads: int = 1, remote: RemoteOptions | None = None
) -> Embedder | None:
    """The embedder ``spec`` names, loaded; ``None`` for ``none``.

    ``threads``: the ONNX runtime's threads per call; ``remote``: the
    settings of ``openai:MODEL``. Raises ``EmbedderConfigError`` for an
    unknown spec, a missing package or model file, a class that cannot be
    imported or does not fit ``Embedder``, an endpoint that cannot be
    reached to learn its vectors' size.
    """
    name = check_spec(spec)
    if name == "none":
        return None
    if name.startswith("openai:"):
        from mnemo_server.embedders.remote import RemoteEmbedder, RemoteSettings

        options = remote or RemoteOptions()
        return RemoteEmbedder(
            RemoteSettings.of(
                name.partition(":")[2],
                url=options.url,
                key_file=options.key_file,
                dimensions=options.dimensions,
                timeout_seconds=options.timeout_seconds,
            )
        )
    if name == "local" or name.startswith("onnx:"):
        from mnemo_server.embedders.onnx import ModelFiles, OnnxEmbedder

        if name == "local":
            from mnemo_server.embedders.packaged import packaged_model

            files, digest = packaged_model()
            return OnnxEmbedder(files, threads=threads, digest=digest)
        return OnnxEmbedder(ModelFiles.in_directory(Path(name.partition(":")[2])), threads=threads)
    if name == "hashing" or name.startswith("hashing:"):
        size = name.partition(":")[2]
        return HashingEmbedder(int(size) if size else 256)
    if name == "static-model":
        from mnemo_server.embedders.static_model import StaticModelEmbedder

        return StaticModelEmbedder()
    return _from_import_path(name)


def _from_import_path(spec: str) -> Embedder:
    module_name, _, class_name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise EmbedderConfigError(
            f"cannot import embedder {spec!r}: {exc}; give 'package.module:ClassName'"
        ) from exc
    try:
        embedder = factory()
    except Exception as exc:  # the caller's class: any failure is a config error
        raise EmbedderConfigError(f"cannot construct embedder {spec!r}: {exc}") from exc
    if not isinstance(embedder, Embedder):
        raise EmbedderConfigError(f"{spec!r} does not provide model, dimensions and embed(texts)")
    return embedder
