"""``mnemo import --memories FILE.jsonl``: load long-term memory entries into
a user through a running server, in ``BatchCreateMemories`` calls (the Python
client's ``batch_create_memories``).

The file: one entry per line, the proto3 JSON of a ``mnemo.v1.Memory``
(``{"text": "Lives in Oslo", "key": "home", "embedding": {"model": "m",
"values": [0.1, 0.2]}}``); blank lines are skipped. A ``name``
(``users/{user}/memories/{id}``, of the ``--user``) chooses the entry's id;
other output-only fields are ignored, as ``CreateMemory`` ignores them. Every
line is checked once before anything is sent.

Entries go in order, in batches of up to ``--batch-size`` (1,000, the
server's maximum) that also stay under ``MAX_BATCH_BYTES``; each batch is
saved all or nothing. Each batch's ``request_id`` is derived from the user,
its index and its entries, so running the same command again after a failure
saves nothing twice: the batches the server already saved answer from its
idempotency records (kept for ``--idempotency-window``, 24 hours by
default), and the load goes on from the first batch it refused. Entries with
a ``name`` are safe past that window too (``ALREADY_EXISTS``). The summary
says how many entries this run stored and how many it skipped: those an
earlier run saved, and repeats of live entries (``Saved``).

A refused batch stops the import (exit 1): its error, each violated field
mapped to its line (``requests[3]`` is ``FILE:3004``), and how many entries
the batches before it saved.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from mnemo.client import MAX_BATCH_ENTRIES, MnemoClient, MnemoError
from mnemo.v1 import memories_pb2 as mm
from mnemo_server.cli.progress import Progress, human_bytes

MAX_BATCH_BYTES = 3 * 1024 * 1024
"""A batch closes before it grows past this many bytes of entries, so that
it fits the server's ``--max-request-bytes`` (4 MiB by default)."""

_REQUESTS = "requests["
_FLOAT_MAX = 3.4028234663852886e38  # the largest finite 32-bit float


class LineProblem(Exception):
    """A line that is no entry of the user (``where``: ``FILE:LINE``)."""


@dataclass
class Batch:
    """The entries of one ``BatchCreateMemories`` call and where they are in the file."""

    index: int
    lines: list[int] = field(default_factory=list)
    requests: list[mm.CreateMemoryRequest] = field(default_factory=list)
    size: int = 0  # bytes of the entries in the request
    file_bytes: int = 0  # bytes of their lines in the file

    def request_id(self, user: str) -> str:
        """The same for the same user, index and entries, on every run."""
        digest = hashlib.sha256(f"users/{user}\0{self.index}\0".encode())
        for request in self.requests:
            digest.update(request.SerializeToString(deterministic=True))
        return f"mnemo-import-{digest.hexdigest()[:40]}"


def _memory_of(data: Any) -> mm.Memory:
    """The proto3 JSON of a ``Memory`` as the message (``json_format``), with
    its vector set directly when it is a plain list of numbers of ``float``
    range: ``json_format`` converts each value in Python, about a
    microsecond apiece, ten times the rest of an entry."""
    embedding = data.pop("embedding", None) if isinstance(data, dict) else None
    plain = (
        isinstance(embedding, dict)
        and set(embedding) <= {"model", "values"}
        and isinstance(embedding.get("model", ""), str)
        and isinstance(values := embedding.get("values", []), list)
        and all(type(v) in (int, float) for v in values)
        and (not values or max(map(abs, values)) <= _FLOAT_MAX)
    )
    if embedding is not None and not plain:
        data["embedding"] = embedding  # json_format says what is wrong with it
    memory = json_format.ParseDict(data, mm.Memory())
    if embedding is not None and plain:
        memory.embedding.model = embedding.get("model", "")
        memory.embedding.values.extend(embedding.get("values", []))
    return memory


def entry_of(line: str, where: str, user: str) -> mm.CreateMemoryRequest:
    """One line as the entry of a batch. Raises ``LineProblem`` naming ``where``."""
    try:
        memory = _memory_of(json.loads(line))
    except (ValueError, json_format.ParseError) as error:
        raise LineProblem(f"{where}: not a mnemo.v1.Memory ({error})") from None
    memory_id = ""
    if memory.name:
        prefix = f"users/{user}/memories/"
        if not memory.name.startswith(prefix) or "/" in memory.name[len(prefix) :]:
            raise LineProblem(f"{where}: name {memory.name!r} is not {prefix}{{id}}")
        memory_id = memory.name[len(prefix) :]
        memory.ClearField("name")
    return mm.CreateMemoryRequest(memory_id=memory_id, memory=memory)


def read_batches(path: Path, user: str, batch_size: int) -> Iterator[Batch]:
    """The file's entries in batches, in order. Raises ``LineProblem`` and
    ``OSError`` / ``UnicodeDecodeError``."""
    batch = Batch(0)
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            request = entry_of(line, f"{path}:{number}", user)
            size = request.ByteSize()
            if batch.requests and (
                len(batch.requests) == batch_size or batch.size + size > MAX_BATCH_BYTES
            ):
                yield batch
                batch = Batch(batch.index + 1)
            batch.lines.append(number)
            batch.requests.append(request)
            batch.size += size
            batch.file_bytes += len(line.encode("utf-8"))
    if batch.requests:
        yield batch


def check_batch_size(value: str) -> int:
    """``--batch-size``: 1 to ``MAX_BATCH_ENTRIES``."""
    size = int(value)
    if not 1 <= size <= MAX_BATCH_ENTRIES:
        raise ValueError(f"--batch-size must be 1 to {MAX_BATCH_ENTRIES}")
    return size


@dataclass
class Saved:
    """What the batches of one run did with their entries."""

    stored: int = 0  # created, or stored as an earlier version of their key
    duplicates: int = 0  # the same fact was already a live entry: nothing stored
    earlier: int = 0  # stored by an earlier run of the same import (a replayed batch)
    archived: int = 0  # entries this run archived (keyed supersede)

    def add(self, saved: mm.BatchCreateMemoriesResponse, replayed: bool) -> None:
        duplicates = sum(o == mm.SAVE_OUTCOME_DUPLICATE for o in saved.outcomes)
        self.duplicates += duplicates
        if replayed:  # the first call's answer: this run stored and archived nothing
            self.earlier += len(saved.outcomes) - duplicates
        else:
            self.stored += len(saved.outcomes) - duplicates
            self.archived += len(saved.archived)

    def skipped(self) -> str:
        """``; skipped ...`` naming why, or nothing when every entry was stored."""
        reasons = [
            f"{count} {why}"
            for count, why in (
                (self.duplicates, "duplicates of live entries"),
                (self.earlier, "already saved by an earlier run of this import"),
            )
            if count
        ]
        if len(reasons) < 2:
            return "".join(f"; skipped {reason}" for reason in reasons)
        return f"; skipped {self.duplicates + self.earlier}: {', '.join(reasons)}"


def import_memories(
    client: MnemoClient, user: str, path: Path, batch_size: int, timeout: float
) -> int:
    """Load the file (see the module doc); the exit code. Raises ``LineProblem``
    and ``OSError`` / ``UnicodeDecodeError`` for the file; reports a refused
    batch itself.

    The summary says how many entries were stored and why the others were
    not: duplicates of live entries (``SAVE_OUTCOME_DUPLICATE``), or batches
    an earlier run saved, whose retry the server answered with the first
    call's response: a response's ``change_cursor`` (the first call's, on a
    retry) at or before the user's latest cursor when this run began."""
    total = path.stat().st_size
    checking = Progress(sys.stderr, "checking", total_bytes=total)
    for checked in read_batches(path, user, batch_size):  # every line, before anything is sent
        checking.add(len(checked.requests), checked.file_bytes)
    checking.clear()
    entries = checking.records
    began_after = client.list_changes(user, page_size=1, timeout=timeout).latest_cursor
    progress = Progress(sys.stderr, "importing", total_bytes=total)
    batches = 0
    done = Saved()
    for batch in read_batches(path, user, batch_size):
        try:
            saved = client.batch_create_memories(
                user, batch.requests, request_id=batch.request_id(user), timeout=timeout
            )
        except MnemoError as error:
            progress.finish(_refused(path, batch, error, progress.records))
            return 1
        batches += 1
        done.add(saved, replayed=0 < saved.change_cursor <= began_after)
        progress.add(len(batch.requests), batch.file_bytes)
    counted = (
        f"imported {entries}" if done.stored == entries else f"stored {done.stored} of {entries}"
    )
    progress.finish(
        f"mnemo: {counted} memories ({human_bytes(progress.bytes)}) in "
        f"{batches} batches into users/{user}"
        + done.skipped()
        + (
            f"; archived {done.archived} {'entry' if done.archived == 1 else 'entries'} "
            "(keyed supersede)"
            if done.archived
            else ""
        )
    )
    return 0


def _refused(path: Path, batch: Batch, error: MnemoError, saved: int) -> str:
    """What to tell about a refused batch: the error, its fields as lines, what to do."""
    first, last = batch.lines[0], batch.lines[-1]
    lines = [f"mnemo: batch {batch.index + 1} ({path}:{first}-{last}) was refused: {error}"]
    named = (v.field[len(_REQUESTS) :].split("]", 1)[0] for v in error.field_violations)
    indexes = dict.fromkeys(int(n) for n in named if n.isdigit() and int(n) < len(batch.lines))
    lines += [f"  {_REQUESTS}{i}] is {path}:{batch.lines[i]}" for i in indexes]
    lines.append(
        f"mnemo: {saved} memories of the batches before it are saved. Fix the file and run "
        "the same command again: those batches are not saved twice (within the server's "
        "idempotency window, 24 hours by default)."
    )
    return "\n".join(lines)
