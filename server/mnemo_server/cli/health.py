"""``mnemo health``: whether a server answers its health check as SERVING
(``grpc.health.v1``), for container health checks and scripts: prints the
status; exit code 0 when serving, 1 otherwise (not serving, shutting down,
or not reachable: then what to do next)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mnemo.client import parse_target
from mnemo_server.cli.connection import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    TARGET_ENV,
    FileProblem,
    ca_file_argument,
    ca_file_of,
    channel_credentials,
    target_argument,
    target_of,
    timeout_argument,
    timeout_of,
)

COMMAND = "health"

__all__ = ["COMMAND", "add_command", "run"]


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="check that a server is serving (exit 0) or not (exit 1)",
        description="Ask a running server's health check (grpc.health.v1); print its status. "
        "Exit 0 when it is SERVING, 1 otherwise.",
    )
    target_argument(parser)
    ca_file_argument(parser)
    parser.add_argument(
        "--service", default="", help="a service's name (default: the whole server)"
    )
    timeout_argument(parser, 5.0, "deadline")


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    target = target_of(args, env)
    try:
        timeout_of(args, env)
        credentials = channel_credentials(ca_file_of(args, env))
        address, credentials = parse_target(target, credentials)
    except (FileProblem, ValueError) as problem:
        print(f"mnemo: {problem}", file=sys.stderr)
        return EXIT_USAGE
    channel = (
        grpc.insecure_channel(address)
        if credentials is None
        else grpc.secure_channel(address, credentials)
    )
    with channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout
            )
        except grpc.RpcError as error:
            print(f"mnemo: {error.code().name}: {error.details()}", file=sys.stderr)
            if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                print(
                    f"mnemo: cannot reach a Mnemo server at {target}: is `mnemo serve` running "
                    f"there? Give its address with --target or ${TARGET_ENV}",
                    file=sys.stderr,
                )
            return EXIT_FAILURE
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(status)
    return EXIT_OK if reply.status == health_pb2.HealthCheckResponse.SERVING else EXIT_FAILURE
