"""``mnemo export`` and ``mnemo import``: a user's data as a JSON Lines file,
through a running server (``ExportUserData`` / ``ImportUserData``, with the
Python client ``mnemo.client``); ``mnemo import --memories`` loads memory
entries instead (``memory_import``).

The file: one ``mnemo.v1.ExportRecord`` per line, in the export's order, as
its proto3 JSON mapping (``json_format.MessageToDict``: camelCase field
names, 64-bit integers as strings, RFC 3339 times), keys sorted, compact,
UTF-8. ``mnemo import`` reads exactly that (any proto3 JSON of an
``ExportRecord`` per line; blank lines are skipped).

``export`` writes to ``FILE.partial`` and renames it when the export is
complete, so a failed export never leaves a truncated ``FILE``. ``import``
reads the whole file once to check every line before it sends anything, then
streams it; the server loads all of it or nothing. The file's names are of
the user who exported it: ``import --user`` takes only a file of that user
(another's is refused before anything is sent, naming ``--as-user``);
``import --as-user USER`` loads it into ``USER``, every name rewritten
(``renaming``).

Progress goes to stderr (``progress.Progress``: a line redrawn in place when
stderr is a terminal, also while ``import`` checks the file), then a summary
line. Exit codes (``connection``): 0 done; 1 the server refused or failed
(its error, reason and field violations on stderr); 2 bad usage, a file that
cannot be read or written, a line that is no export record, or a file of
another user without ``--as-user``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from google.protobuf import json_format

from mnemo.client import MAX_BATCH_ENTRIES, ExportRecord, MnemoClient
from mnemo_server.cli import memory_import, renaming
from mnemo_server.cli.connection import (
    EXIT_NO_DATA,
    EXIT_OK,
    FileProblem,
    connection_arguments,
    run_with_client,
)
from mnemo_server.cli.progress import Progress, human_bytes

COMMANDS = ("export", "import")
DEFAULT_TIMEOUT_S = 3600.0
_TIMEOUT_HELP = "deadline of the whole transfer, of each batch with --memories"


# ----------------------------------------------------------------- format


def record_line(record: ExportRecord) -> str:
    """One line of the file (without the newline)."""
    data = json_format.MessageToDict(record)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_line(line: str, where: str) -> ExportRecord:
    """A line of the file as a record. Raises ``FileProblem`` naming ``where``."""
    try:
        return json_format.ParseDict(json.loads(line), ExportRecord())
    except (ValueError, json_format.ParseError) as error:
        raise FileProblem(f"{where}: not an export record ({error})") from None


def read_records(path: Path, progress: Progress | None = None) -> Iterator[ExportRecord]:
    """The records of the file, in order (``progress`` counts them). Raises
    ``FileProblem``."""
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    record = parse_line(line, f"{path}:{number}")
                    if progress is not None:
                        progress.add(1, len(line.encode("utf-8")))
                    yield record
    except (OSError, UnicodeDecodeError) as error:
        raise FileProblem(f"cannot read {path}: {error}") from None


# --------------------------------------------------------------- commands


def add_commands(commands: Any) -> None:
    """Add ``export`` and ``import`` to the ``mnemo`` subcommands."""
    export = commands.add_parser(
        "export",
        help="write a user's data to a JSON Lines file (through a running server)",
        description="Stream every record of a user's data from a running Mnemo server into "
        "a JSON Lines file (one mnemo.v1.ExportRecord per line).",
    )
    export.add_argument("--user", required=True, help="the user id")
    export.add_argument("--output", metavar="FILE.jsonl", help="the file (default: stdout)")
    connection_arguments(export, DEFAULT_TIMEOUT_S, _TIMEOUT_HELP)
    load = commands.add_parser(
        "import",
        help="load a JSON Lines export into a user without data, or memories into any user "
        "(through a running server)",
        description="--input: load a file written by 'mnemo export' into a user who has no "
        "data, all of it or nothing: with --user, into the user who exported it; with "
        "--as-user, into any user, every name of the file rewritten to that user's. "
        "--memories: save long-term memory entries (one mnemo.v1.Memory as JSON per line) "
        "into the user, in BatchCreateMemories calls, each batch all or nothing; running "
        "the same command again after a failure saves no batch twice.",
    )
    into = load.add_mutually_exclusive_group(required=True)
    into.add_argument("--user", help="the user id (with --input: the one who exported the file)")
    into.add_argument(
        "--as-user",
        metavar="USER",
        help="with --input: load into USER, rewriting every name of the file (those of the "
        "user who exported it) to USER's",
    )
    source = load.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="FILE.jsonl", help="a file of 'mnemo export'")
    source.add_argument("--memories", metavar="FILE.jsonl", help="a file of memory entries")
    load.add_argument(
        "--batch-size",
        type=memory_import.check_batch_size,
        default=MAX_BATCH_ENTRIES,
        metavar="N",
        help=f"with --memories: entries per call, 1 to {MAX_BATCH_ENTRIES} "
        f"(default {MAX_BATCH_ENTRIES})",
    )
    connection_arguments(load, DEFAULT_TIMEOUT_S, _TIMEOUT_HELP)


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run ``mnemo export`` or ``mnemo import``; the exit code."""
    return run_with_client(args, env, _export if args.command == "export" else _import)


def _export(client: MnemoClient, args: argparse.Namespace) -> int:
    progress = Progress(sys.stderr, "exporting")
    records = client.export_user_data(args.user, timeout=args.timeout)
    if not args.output:
        _write(records, sys.stdout, progress)
        destination = "stdout"
    else:
        final = Path(args.output)
        partial = final.with_name(final.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                _write(records, out, progress)
            if progress.records:
                os.replace(partial, final)
        except OSError as error:
            raise FileProblem(f"cannot write {final}: {error}") from None
        finally:
            partial.unlink(missing_ok=True)
        destination = str(final)
    if not progress.records:
        progress.finish(f"mnemo: users/{args.user} has no data: nothing exported (no file written)")
        return EXIT_NO_DATA
    progress.finish(
        f"mnemo: exported {progress.records} records ({human_bytes(progress.bytes)}) "
        f"of users/{args.user} to {destination}"
    )
    return EXIT_OK


def _write(records: Iterator[ExportRecord], out: TextIO, progress: Progress) -> None:
    for record in records:
        line = record_line(record) + "\n"
        out.write(line)
        progress.add(1, len(line.encode("utf-8")))


def _import(client: MnemoClient, args: argparse.Namespace) -> int:
    if args.memories:
        if args.as_user:
            raise FileProblem("--as-user goes with --input; give --memories a --user")
        path = Path(args.memories)
        try:
            return memory_import.import_memories(
                client, args.user, path, args.batch_size, args.timeout
            )
        except memory_import.LineProblem as problem:
            raise FileProblem(str(problem)) from None
        except (OSError, UnicodeDecodeError) as error:
            raise FileProblem(f"cannot read {path}: {error}") from None
    path = Path(args.input)
    try:
        total = path.stat().st_size
    except OSError as error:
        raise FileProblem(f"cannot read {path}: {error}") from None
    checked, owner = _check(path, total)
    user = args.as_user or args.user
    if owner is not None and owner != user and not args.as_user:
        raise FileProblem(
            f"{path} holds the data of users/{owner}, not of users/{user}: to load it into "
            f"users/{user}, every name rewritten, use --as-user {user} instead of --user"
        )
    progress = Progress(sys.stderr, "importing", total_bytes=total)
    records = read_records(path, progress)
    if owner is not None and owner != user:
        records = (renaming.renamed(record, owner, user) for record in records)
    loaded = client.import_user_data(user, records, timeout=args.timeout)
    counts = ", ".join(f"{kind} {count}" for kind, count in sorted(loaded.items()))
    renamed = f" (names of users/{owner} rewritten)" if owner not in (None, user) else ""
    progress.finish(
        f"mnemo: imported {checked} records ({human_bytes(progress.bytes)}) into "
        f"users/{user}{renamed}" + (f": {counts}" if counts else "")
    )
    return EXIT_OK


def _check(path: Path, total: int) -> tuple[int, str | None]:
    """Read every line before anything is sent: the number of records and
    the user whose names they carry (of the first record naming one)."""
    progress = Progress(sys.stderr, "checking", total_bytes=total)
    owner: str | None = None
    count = 0
    for record in read_records(path, progress):
        count += 1
        owner = owner or renaming.user_of(record)
    progress.clear()
    return count, owner
