"""Exact vector search over one user's vectors of one model, with a
per-process cache of the vectors as a numpy matrix.

``UserVectors`` holds the live (unarchived) entries' vectors of a (user,
model) as stored (float32), each scaled by a power of two to a length in
[0.5, 1) (exact: the cosines are those of the stored values), their
lengths (float64), and the entries' ids and conversations. ``nearest``
scores every allowed row in float32 (one matrix-vector product), keeps the
rows within float32 rounding error (``tolerance``) of the ``k``-th best
score (``partition``), and computes the exact cosines of those few in
float64 from the same values; so no entry of the exact top ``k`` is
missed, and the cosines are exact. The scaling is what makes the float32
scores trustworthy whatever the magnitude of the stored values: a valid
embedding may hold any finite float32, and unscaled, a row of length
1e-40 scored ``inf`` or ``nan`` and one of length 1e38 overflowed.

The cosine is ``domain.vectors.cosine`` (the one definition of similarity);
this module computes it in matrix form, one product over the user's whole
matrix, because that is what keeps a semantic recall within milliseconds: a
loop of ``cosine`` over 100,000 vectors of 384 values would take seconds.
The exact cosines it returns are that definition's (in float64, from the
stored values), clipped to [-1, 1]; an all-zero query or one of another
dimension finds nothing (or raises: ``nearest``, ``search`` when strict)
rather than scoring 0.

Why float32 and not a compact float16 or int8 matrix: numpy multiplies
float32 with BLAS and the others without (measured on this project's 2-core
machine, 100,000 x 64: float32 0.6 ms, int8 6.2 ms, float16 45 ms per query;
100,000 x 384: 8, 32 and 220 ms), and a recall must stay within a few
milliseconds. Memory: 4 bytes per dimension per vector (100,000 x 64: 26 MB;
x 384: 154 MB) plus about 80 bytes per entry for its id and length.

``VectorCache`` keeps ``UserVectors`` per (user, model) together with the
user's ``vectors_version`` (a counter in the database that every change of
the user's live vectors increments in its own transaction). A reader reads
the counter in its transaction and uses the cached matrix only if the
version is the same, so several server processes stay correct. Least
recently used matrices are dropped beyond ``max_bytes``. Thread-safe.

BLAS runs single-threaded in a process that has a ``VectorCache``
(``threadpoolctl``): OpenBLAS's threads spin while they wait, and on a
server whose cores are busy with requests one matrix-vector product took
five times longer with them (10,000 x 64: 0.66 vs 0.13 ms even on an idle
2-core machine) and cost 20 ms of CPU per semantic recall under load.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from mnemo_server.domain.embedding import dimension_mismatch
from mnemo_server.domain.errors import Entry, Part
from mnemo_server.domain.memory_models import Embedding
from mnemo_server.domain.observe import NO_OBSERVER, Observer
from mnemo_server.domain.ranking import NOTHING_NEAR, Nearest
from mnemo_server.domain.relevance import QueryField

DEFAULT_MAX_BYTES = 1 << 30
"""The default budget of a process's cached vectors (1 GiB)."""

_FLOAT32_EPSILON = 2.0**-24
FIELD_DIGITS = 6
"""A query field's mean and spread are rounded to this many digits (float32
sums: the same on every backend, whose rows are in the same order)."""
MAX_REPORTED = 100_000
"""Skipped vectors remembered as reported (then the memory starts afresh)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UserVectors:
    """The vectors of one (user, model) at one ``vectors_version``."""

    version: int
    memory_ids: tuple[str, ...]
    conversations: tuple[str, ...]
    """The distinct conversation ids; ``codes[i]`` indexes it for entry ``i``."""
    codes: npt.NDArray[np.int32]
    vectors: npt.NDArray[np.float32]
    """Shape ``(len(memory_ids), dimensions)``: the stored values, each row
    scaled by a power of two to a length in [0.5, 1)."""
    lengths: npt.NDArray[np.float64]
    """Each scaled row's Euclidean length (never 0: zero rows are skipped)."""
    inverse_lengths: npt.NDArray[np.float32]
    """1 / ``lengths``."""
    skipped: tuple[str, ...] = ()
    """The entries whose stored vector is not a valid vector of
    ``dimensions`` values, left out (see ``build``)."""

    @classmethod
    def build(
        cls, version: int, dimensions: int, items: Iterable[tuple[str, str, bytes]]
    ) -> UserVectors:
        """From ``(memory_id, conversation_id, float32 little-endian vector)``.
        A vector that is not a valid vector of ``dimensions`` values (another
        length, a value that is not finite, all zeros: the rule of
        ``domain.vectors.vector_problem``, here on the stored float32 rows)
        is left out and its entry listed in ``skipped``: a bad row written
        by an older release, or straight into the database, never fails a
        read."""
        ids: list[str] = []
        conversations: dict[str, int] = {}
        codes: list[int] = []
        blobs: list[bytes] = []
        skipped: list[str] = []
        width = 4 * dimensions
        for memory_id, conversation_id, vector in items:
            if len(vector) != width:
                skipped.append(memory_id)
                continue
            ids.append(memory_id)
            codes.append(conversations.setdefault(conversation_id, len(conversations)))
            blobs.append(vector)
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dimensions)
        del blobs
        matrix = matrix.astype(np.float32)  # native order, writeable copy
        stored = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
        # A NaN or infinity makes the length so, all zeros makes it 0 (float32
        # values squared cannot overflow float64): the check costs nothing.
        valid = np.isfinite(stored) & (stored > 0)
        if not valid.all():
            skipped += [memory_id for memory_id, ok in zip(ids, valid, strict=True) if not ok]
            ids = [memory_id for memory_id, ok in zip(ids, valid, strict=True) if ok]
            codes = [code for code, ok in zip(codes, valid, strict=True) if ok]
            matrix, stored = matrix[valid], stored[valid]
        _, exponents = np.frexp(stored)  # stored = m * 2**exponent, 0.5 <= m < 1
        matrix = np.ldexp(matrix, -exponents[:, np.newaxis].astype(np.int32)).astype(np.float32)
        lengths = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
        with np.errstate(divide="ignore"):
            inverse = np.where(lengths > 0, 1.0 / lengths, 0.0).astype(np.float32)
        code_array = np.asarray(codes, dtype=np.int32)
        for array in (matrix, lengths, inverse, code_array):
            array.flags.writeable = False
        return cls(
            version,
            tuple(ids),
            tuple(conversations),
            code_array,
            matrix,
            lengths,
            inverse,
            tuple(skipped),
        )

    @property
    def dimensions(self) -> int:
        return int(self.vectors.shape[1])

    @functools.cached_property
    def embedded(self) -> frozenset[str]:
        """The entries with a (valid) vector here."""
        return frozenset(self.memory_ids)

    @property
    def nbytes(self) -> int:
        arrays = (self.vectors, self.lengths, self.inverse_lengths, self.codes)
        # Per entry: its id and its place in ``rows``.
        return sum(int(a.nbytes) for a in arrays) + 168 * len(self.memory_ids)

    def tolerance(self) -> float:
        """A bound of the float32 error of a score (unit query, scaled row)."""
        return 4.0 * (self.dimensions + 8) * _FLOAT32_EPSILON

    @functools.cached_property
    def rows(self) -> dict[str, int]:
        """Each entry's row."""
        return {memory_id: row for row, memory_id in enumerate(self.memory_ids)}

    def search(
        self, embedding: Embedding, k: int, conversations: Sequence[str], *, strict: bool
    ) -> Nearest:
        """What exact search finds for a query ``embedding`` of these
        vectors' model (``ranking.Nearest``): the ``k`` nearest entries of
        ``conversations`` (``nearest``), the query's field over all of them
        and the exact cosines of any of them (in one product). Nothing for an all-zero query
        or an empty matrix; a query of another dimension raises
        EMBEDDING_DIMENSION_MISMATCH (entry ``Part.QUERY_EMBEDDING``) when
        ``strict`` (a caller's vector), else finds nothing (the server's
        own: the fault is not the caller's)."""
        if k <= 0 or not self.memory_ids:
            return NOTHING_NEAR
        if embedding.dimensions != self.dimensions:
            if not strict:
                return NOTHING_NEAR
            raise dimension_mismatch(
                Entry(Part.QUERY_EMBEDDING), expected=self.dimensions, got=embedding.dimensions
            )
        if not any(embedding.values):
            return NOTHING_NEAR
        scored = self._scores(np.asarray(embedding.values, dtype=np.float64), conversations)
        if scored is None:
            return NOTHING_NEAR
        unit, scores, count = scored
        searched = scores if count == len(scores) else scores[scores > -np.inf]
        field = QueryField(
            round(float(searched.mean(dtype=np.float64)), FIELD_DIGITS),
            round(float(searched.std(dtype=np.float64)), FIELD_DIGITS),
            len(searched),
        )
        found = self._top(unit, scores, count, k)
        known = dict(found)

        def cosines(memory_ids: Sequence[str]) -> dict[str, float]:
            found: dict[str, float] = {}
            others: list[str] = []
            rows: list[int] = []
            place = self.rows.get
            for memory_id in memory_ids:
                cosine = known.get(memory_id)
                if cosine is not None:
                    found[memory_id] = cosine
                elif (row := place(memory_id)) is not None:
                    others.append(memory_id)
                    rows.append(row)
            if rows:
                chosen = np.asarray(rows, dtype=np.intp)
                if count < len(scores):  # rows outside the conversations were not searched
                    inside = scores[chosen] > -np.inf
                    others = list(itertools.compress(others, inside.tolist()))
                    chosen = chosen[inside]
                found.update(zip(others, self._exact(unit, chosen), strict=True))
            return found

        return Nearest(known, field, cosines)

    def nearest(
        self, query: Sequence[float] | npt.NDArray[np.float64], k: int, conversations: Sequence[str]
    ) -> list[tuple[str, float]]:
        """The ``k`` entries most similar to ``query`` whose conversation is
        in ``conversations`` (all of them if fewer), with their exact cosines
        (float64 arithmetic on the stored float32 values, clipped to
        [-1, 1]), best first; equal cosines by ``memory_id``. Raises
        ``ValueError`` when the query has another dimension or is all zeros."""
        if len(query) != self.dimensions:
            raise ValueError(f"query has {len(query)} dimensions, the vectors {self.dimensions}")
        scored = self._scores(np.asarray(query, dtype=np.float64), conversations)
        if k <= 0 or scored is None:
            return []
        return self._top(*scored, k)

    def _scores(
        self, query: npt.NDArray[np.float64], conversations: Sequence[str]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float32], int] | None:
        """The unit query, every row's float32 score (-inf outside
        ``conversations``) and how many rows are inside; ``None`` when none
        is. Raises ``ValueError`` for an all-zero query."""
        largest = float(np.max(np.abs(query))) if len(query) else 0.0
        if largest == 0.0:
            raise ValueError("query vector is all zeros")
        vector = query / largest  # no overflow or underflow in the length
        wanted = [self.conversations.index(c) for c in conversations if c in self.conversations]
        if not wanted:
            return None
        unit = vector / float(np.linalg.norm(vector))
        scores = (self.vectors @ unit.astype(np.float32)) * self.inverse_lengths
        if len(wanted) < len(self.conversations):
            allowed = np.isin(self.codes, np.asarray(wanted, dtype=np.int32))
            scores[~allowed] = -np.inf
            return unit, scores, int(allowed.sum())
        return unit, scores, len(scores)

    def _top(
        self,
        unit: npt.NDArray[np.float64],
        scores: npt.NDArray[np.float32],
        count: int,
        k: int,
    ) -> list[tuple[str, float]]:
        if count > k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            chosen = np.flatnonzero(scores >= kth - self.tolerance())
        else:
            chosen = np.flatnonzero(scores > -np.inf)
        exact = self._exact(unit, chosen)
        ids = self.memory_ids
        found = [(ids[i], c) for i, c in zip(chosen.tolist(), exact, strict=True)]
        found.sort(key=lambda item: (-item[1], item[0]))
        return found[:k]

    def _exact(self, unit: npt.NDArray[np.float64], chosen: npt.NDArray[np.intp]) -> list[float]:
        """The exact cosines of the rows ``chosen`` (float64 arithmetic on
        the stored values, clipped to [-1, 1])."""
        rows = self.vectors[chosen].astype(np.float64)
        lengths = self.lengths[chosen]
        with np.errstate(divide="ignore", invalid="ignore"):
            exact = np.where(lengths > 0, (rows @ unit) / lengths, 0.0)
        clipped: list[float] = np.clip(exact, -1.0, 1.0).tolist()
        return clipped


@functools.cache
def _single_threaded_blas() -> None:
    """Limit BLAS to one thread, process-wide, once (see the module doc)."""
    threadpool_limits(limits=1, user_api="blas")


class VectorCache:
    """``UserVectors`` per (user, model), valid for one ``vectors_version``
    (see the module doc)."""

    def __init__(
        self, max_bytes: int = DEFAULT_MAX_BYTES, *, observer: Observer = NO_OBSERVER
    ) -> None:
        _single_threaded_blas()
        self._max_bytes = max_bytes
        self._observer = observer
        self._entries: OrderedDict[tuple[str, str], UserVectors] = OrderedDict()
        self._bytes = 0
        self._reported: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    def report_skipped(self, user_id: str, model: str, vectors: UserVectors) -> None:
        """Count and log the entries ``vectors`` skipped (``UserVectors.build``),
        each once per process (at most ``MAX_REPORTED`` remembered)."""
        if not vectors.skipped:
            return
        with self._lock:
            new = [m for m in vectors.skipped if (user_id, model, m) not in self._reported]
            if len(self._reported) + len(new) > MAX_REPORTED:
                self._reported.clear()
            self._reported.update((user_id, model, m) for m in new)
        if not new:
            return
        self._observer.vectors_skipped(len(new))
        log.warning(
            "recall skips %d stored vectors of model %r of user %s that are not valid vectors "
            "of the model (wrong length, not finite, or all zeros), entries %s: save their "
            "text again or delete them",
            len(new),
            model,
            user_id,
            new[:10],
        )

    def get(self, user_id: str, model: str, version: int) -> UserVectors | None:
        """The cached vectors if they are of ``version``, else ``None``."""
        with self._lock:
            found = self._entries.get((user_id, model))
            if found is None or found.version != version:
                return None
            self._entries.move_to_end((user_id, model))
            return found

    def put(self, user_id: str, model: str, vectors: UserVectors) -> None:
        """Keep ``vectors`` (unless an entry of a newer version is there),
        dropping the least recently used beyond the budget."""
        with self._lock:
            key = (user_id, model)
            old = self._entries.get(key)
            if old is not None:
                if old.version > vectors.version:
                    return
                self._bytes -= old.nbytes
                del self._entries[key]
            self._entries[key] = vectors
            self._bytes += vectors.nbytes
            while self._bytes > self._max_bytes and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.nbytes

    def forget_user(self, user_id: str) -> None:
        """Drop every cached matrix of ``user_id`` (an erased user's vectors
        leave the process at once)."""
        with self._lock:
            for key in [key for key in self._entries if key[0] == user_id]:
                self._bytes -= self._entries.pop(key).nbytes

    @property
    def cached_bytes(self) -> int:
        with self._lock:
            return self._bytes
