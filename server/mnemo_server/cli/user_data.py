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
streams it; the server loads all of it or nothing.

Progress goes to stderr (``progress.Progress``: a line redrawn in place when
stderr is a terminal), then a summary line. Exit codes: 0 done; 1 the server
refused or failed (its error, reason and field violations on stderr); 2 bad
usage, a file that cannot be read or written, or a line that is no export
record.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import grpc
from google.protobuf import json_format

from mnemo.client import DEFAULT_TARGET, MAX_BATCH_ENTRIES, ExportRecord, MnemoClient, MnemoError
from mnemo_server.cli import memory_import
from mnemo_server.cli.progress import Progress, human_bytes

COMMANDS = ("export", "import")
EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
DEFAULT_TIMEOUT_S = 3600.0
TOKEN_ENV = "MNEMO_TOKEN"


class FileProblem(Exception):
    """A file that cannot be read or written, or a line that is no record."""


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
    _connection_arguments(export)
    load = commands.add_parser(
        "import",
        help="load a JSON Lines export into a user without data, or memories into any user "
        "(through a running server)",
        description="--input: load a file written by 'mnemo export' into a user who has no "
        "data, all of it or nothing; every name in the file must be of that user. "
        "--memories: save long-term memory entries (one mnemo.v1.Memory as JSON per line) "
        "into the user, in BatchCreateMemories calls, each batch all or nothing; running "
        "the same command again after a failure saves no batch twice.",
    )
    load.add_argument("--user", required=True, help="the user id")
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
    _connection_arguments(load)


def _connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target", default=DEFAULT_TARGET, metavar="HOST:PORT", help="the server's address"
    )
    parser.add_argument(
        "--token",
        default=None,
        help=f"a bearer token (JWT) for --auth jwt servers; default: ${TOKEN_ENV}",
    )
    parser.add_argument(
        "--ca-file", default=None, help="use TLS, trusting the CA certificates in this PEM file"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="deadline of the whole transfer, of each batch with --memories "
        f"(default {DEFAULT_TIMEOUT_S:.0f})",
    )


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run ``mnemo export`` or ``mnemo import``; the exit code."""
    try:
        client = _client(args, env)
    except FileProblem as problem:
        print(f"mnemo: {problem}", file=sys.stderr)
        return EXIT_USAGE
    with client:
        try:
            if args.command == "export":
                return _export(client, args)
            return _import(client, args)
        except FileProblem as problem:
            print(f"mnemo: {problem}", file=sys.stderr)
            return EXIT_USAGE
        except MnemoError as error:
            print(f"mnemo: {error}", file=sys.stderr)
            return EXIT_FAILURE


def channel_credentials(ca_file: str | None) -> grpc.ChannelCredentials | None:
    """TLS credentials trusting the CA certificates of ``--ca-file``; ``None``
    (plaintext) without one. Raises ``FileProblem``."""
    if not ca_file:
        return None
    try:
        roots = Path(ca_file).read_bytes()
    except OSError as error:
        raise FileProblem(f"cannot read {ca_file}: {error}") from None
    return grpc.ssl_channel_credentials(root_certificates=roots)


def _client(args: argparse.Namespace, env: Mapping[str, str]) -> MnemoClient:
    credentials = channel_credentials(args.ca_file)
    token = args.token if args.token is not None else env.get(TOKEN_ENV)
    # A record is as large as the request that wrote it, plus names and times:
    # take any size the server sends (the server bounds what it receives).
    options = (("grpc.max_receive_message_length", -1),)
    return MnemoClient(args.target, credentials=credentials, token=token or None, options=options)


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
            os.replace(partial, final)
        except OSError as error:
            raise FileProblem(f"cannot write {final}: {error}") from None
        finally:
            partial.unlink(missing_ok=True)
        destination = str(final)
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
    checked = sum(1 for _ in read_records(path))  # every line, before anything is sent
    try:
        total = path.stat().st_size
    except OSError as error:
        raise FileProblem(f"cannot read {path}: {error}") from None
    progress = Progress(sys.stderr, "importing", total_bytes=total)
    loaded = client.import_user_data(args.user, read_records(path, progress), timeout=args.timeout)
    counts = ", ".join(f"{kind} {count}" for kind, count in sorted(loaded.items()))
    progress.finish(
        f"mnemo: imported {checked} records ({human_bytes(progress.bytes)}) into "
        f"users/{args.user}" + (f": {counts}" if counts else "")
    )
    return EXIT_OK
