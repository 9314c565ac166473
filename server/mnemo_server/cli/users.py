"""``mnemo users erase USER``: erase everything stored for a user, through a
running server (``GovernanceService.DeleteUserData``), and print the receipt.

Without ``--yes`` it first asks on stderr and reads the answer from stdin:
only ``y`` or ``yes`` erases; anything else (an empty line, end of input)
erases nothing and exits 1. The receipt goes to stdout: when the erasure
committed and its change cursor, the rows erased per table (those that had
any, then the total), and the rows kept on purpose (the user's consent
decision and memory switch, so that an erasure never turns collection back
on); with ``--json``, the ``DeleteUserDataResponse`` as proto3 JSON
instead. Erasing a user with no data erases nothing and says so. Exit codes
as ``connection``; 1 also for an answer other than yes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format

from mnemo.client import MnemoClient
from mnemo.v1 import governance_pb2 as gv
from mnemo_server.cli.connection import (
    EXIT_FAILURE,
    EXIT_NO_DATA,
    EXIT_OK,
    action_parser,
    connection_arguments,
    run_with_client,
)
from mnemo_server.cli.progress import Progress

COMMAND = "users"
DEFAULT_TIMEOUT_S = 600.0
_YES = ("y", "yes")


def add_command(commands: Any) -> None:
    """Add ``users erase`` to the ``mnemo`` subcommands."""
    erase = action_parser(
        commands,
        COMMAND,
        "a user's data as a whole",
        "erase",
        help="erase everything stored for a user and print the receipt",
        description="Erase every row that belongs to the user, in every table "
        "(DeleteUserData), and print the receipt: rows erased per table, and the rows "
        "kept on purpose (the consent decision and the memory switch). Asks for "
        "confirmation unless --yes. It cannot be undone: 'mnemo export' first to keep a copy.",
    )
    erase.add_argument("user", metavar="USER", help="the user id")
    erase.add_argument("--yes", action="store_true", help="erase without asking")
    erase.add_argument(
        "--json", action="store_true", help="print the receipt as proto3 JSON (for scripts)"
    )
    connection_arguments(erase, DEFAULT_TIMEOUT_S, "deadline of the erasure")


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run ``mnemo users erase``; the exit code."""
    return run_with_client(args, env, _erase)


def _confirmed(user: str, target: str) -> bool:
    sys.stderr.write(
        f"Erase everything stored for users/{user} on {target}? It cannot be undone. [y/N] "
    )
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not sys.stdin.isatty():  # a typed answer ends the line itself
        sys.stderr.write("\n")
    return answer.strip().lower() in _YES


def _erase(client: MnemoClient, args: argparse.Namespace) -> int:
    if not args.yes and not _confirmed(args.user, args.target):
        print(f"mnemo: users/{args.user} not erased (nothing changed)", file=sys.stderr)
        return EXIT_FAILURE
    progress = Progress(sys.stderr, "erasing")
    progress.show(f"erasing users/{args.user} (one transaction) ...")
    receipt = client.delete_user_data(args.user, timeout=args.timeout)
    progress.clear()
    if args.json:
        print(json.dumps(json_format.MessageToDict(receipt), indent=2, sort_keys=True))
    else:
        print(receipt_text(args.user, receipt))
    return EXIT_OK if any(receipt.deleted_rows.values()) else EXIT_NO_DATA


def receipt_text(user: str, receipt: gv.DeleteUserDataResponse) -> str:
    """The receipt, readable: a heading, then one line per table with rows."""
    erased = {table: n for table, n in sorted(receipt.deleted_rows.items()) if n}
    if not erased:
        lines = [f"users/{user} had no data: nothing erased"]
    else:
        when = receipt.delete_time.ToJsonString()
        lines = [f"erased users/{user} at {when} (change cursor {receipt.change_cursor}):"]
        width = max(len(table) for table in erased)
        lines += [f"  {table:<{width}}  {count:>8}" for table, count in erased.items()]
        lines.append(f"  {'total':<{width}}  {sum(erased.values()):>8} rows")
    kept = {table: n for table, n in sorted(receipt.retained_rows.items()) if n}
    if kept:
        what = ", ".join(f"{table} {count}" for table, count in kept.items())
        lines.append(f"kept (the consent decision and memory switch stay in force): {what}")
    return "\n".join(lines)
