"""Text embedding models in ONNX, run by onnxruntime with a Hugging Face
``tokenizers`` tokenizer: no torch, nothing downloaded.

A model is a directory (or the files a package ships, ``packaged``) holding
the ONNX graph, ``tokenizer.json`` and the few facts the graph does not say
(``ModelCard``): how token vectors become one vector (the ``[CLS]`` token's,
or the mean over the real tokens), whether to L2-normalise it, the longest
input in tokens, and the text prepended to queries and to documents (some
models are trained with an instruction on the query side). A directory
describes itself in ``mnemo-embedder.json``::

    {"name": "bge-small-en-v1.5", "pooling": "cls", "normalize": true,
     "max_tokens": 512, "query_prefix": "", "document_prefix": ""}

The graph takes ``input_ids`` and ``attention_mask`` (and ``token_type_ids``
when it declares them), int64, and its first output is the token vectors
``[batch, tokens, dimensions]`` (``last_hidden_state``). Texts are embedded
one per run by default (``batch_size`` 1): a quantised (int8) graph scales
its activations per run, so in a batch a text's vector depends on the texts
beside it (cosine 0.992 against its vector alone, measured with the shipped
model), while batches of 8 or 32 gained only 18% in texts per second. A
text then always gets the same vector, whatever else is being embedded. A
larger ``batch_size`` sorts the texts by length so that a batch pads little;
the results come back in the caller's order.

The model's name on its vectors is its card's name plus the first 12 hex
digits of the graph's SHA-256: two files of the same name that compute
different vectors never share vectors.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemo_server.domain.embedding import EmbedderConfigError

CARD_FILE = "mnemo-embedder.json"
POOLINGS = ("cls", "mean")


@dataclass(frozen=True)
class ModelCard:
    """What the graph itself does not say (see the module docstring)."""

    name: str
    pooling: str = "mean"
    normalize: bool = True
    max_tokens: int = 512
    query_prefix: str = ""
    document_prefix: str = ""

    @classmethod
    def read(cls, path: Path) -> ModelCard:
        """The card in ``path``; raises ``EmbedderConfigError`` if it is unusable."""
        try:
            fields: Any = json.loads(path.read_text(encoding="utf-8"))
            card = cls(**fields)
        except (OSError, ValueError, TypeError) as error:
            raise EmbedderConfigError(f"cannot read the model card {path}: {error}") from None
        if card.pooling not in POOLINGS or not 1 <= card.max_tokens <= 8192 or not card.name:
            raise EmbedderConfigError(
                f"{path}: pooling must be cls or mean, max_tokens 1..8192 and name non-empty"
            )
        return card


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's graph and tokenizer are, and its card."""

    graph: Path
    tokenizer: Path
    card: ModelCard

    @classmethod
    def in_directory(cls, directory: Path) -> ModelFiles:
        """A model directory: ``model.onnx`` (or the only ``*.onnx``), ``tokenizer.json``
        and ``mnemo-embedder.json``. Raises ``EmbedderConfigError`` naming what is missing."""
        if not directory.is_dir():
            raise EmbedderConfigError(f"the model directory {directory} does not exist")
        graphs = [directory / "model.onnx"] if (directory / "model.onnx").is_file() else []
        graphs = graphs or sorted(directory.glob("*.onnx"))
        if len(graphs) != 1:
            raise EmbedderConfigError(
                f"{directory} must hold model.onnx (or exactly one *.onnx file); found "
                f"{len(graphs)}"
            )
        tokenizer = directory / "tokenizer.json"
        if not tokenizer.is_file():
            raise EmbedderConfigError(f"{directory} has no tokenizer.json")
        return cls(graph=graphs[0], tokenizer=tokenizer, card=ModelCard.read(directory / CARD_FILE))


def file_digest(path: Path) -> str:
    """The SHA-256 of a file, in hex."""
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


class OnnxEmbedder:
    """An ONNX text-embedding model (see the module docstring).

    ``threads``: onnxruntime's intra-op threads (1: the calling thread does
    the work, which is what a background embedder at a low priority needs).
    Raises ``EmbedderConfigError`` when the files cannot be loaded.
    """

    def __init__(
        self,
        files: ModelFiles,
        *,
        threads: int = 1,
        batch_size: int = 1,
        digest: str | None = None,
    ) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as error:
            raise EmbedderConfigError(
                f"ONNX embedders need onnxruntime and tokenizers: pip install mnemo-server ({error})"
            ) from None
        self._card = files.card
        self._batch_size = batch_size
        try:
            tokenizer = Tokenizer.from_file(str(files.tokenizer))
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = onnxruntime.InferenceSession(
                str(files.graph), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # any loader failure is a configuration problem
            raise EmbedderConfigError(f"cannot load the model {files.graph}: {error}") from None
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=files.card.max_tokens)
        self._tokenizer = tokenizer
        inputs = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise EmbedderConfigError(
                f"{files.graph} takes {sorted(inputs)}; expected input_ids and attention_mask"
            )
        self._token_types = "token_type_ids" in inputs
        self._model = f"{files.card.name}-{(digest or file_digest(files.graph))[:12]}"
        self._dimensions = int(self._run(["dimensions"]).shape[1])

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def card(self) -> ModelCard:
        return self._card

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Document vectors (the card's ``document_prefix`` prepended)."""
        return self._embed([self._card.document_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """Query vectors (the card's ``query_prefix`` prepended)."""
        return self._embed([self._card.query_prefix + t for t in texts])

    def _embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        result: list[tuple[float, ...]] = [()] * len(texts)
        for start in range(0, len(order), self._batch_size):
            chosen = order[start : start + self._batch_size]
            vectors = self._run([texts[i] for i in chosen])
            for i, row in zip(chosen, vectors.tolist(), strict=True):
                result[i] = tuple(row)
        return result

    def _run(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encoded = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for row, item in enumerate(encoded):
            ids[row, : len(item.ids)] = item.ids
            mask[row, : len(item.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if self._token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens: npt.NDArray[np.float32] = self._session.run(None, feed)[0]
        if self._card.pooling == "cls":
            pooled = tokens[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        pooled = pooled.astype(np.float32)
        if self._card.normalize:
            lengths = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(lengths, 1e-12)
        return pooled
