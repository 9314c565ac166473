"""Every RPC of every ``mnemo.v1`` service, from the descriptors, and a way to call any of them.

``all_rpcs()`` imports every ``*_pb2`` module of the ``mnemo.v1`` package and
lists the methods of its services, so an RPC (or a service, or a proto file)
added later is covered by the tests that use it without touching them.
``call`` sends a request message (or raw bytes) the way the method expects:
unary or streaming, in either direction.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message

import mnemo.v1

CALL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Rpc:
    """One method of a ``mnemo.v1`` service."""

    method: MethodDescriptor

    @property
    def name(self) -> str:
        return self.method.name

    @property
    def path(self) -> str:
        return f"/{self.method.containing_service.full_name}/{self.method.name}"

    @property
    def label(self) -> str:
        return f"{self.method.containing_service.name}.{self.method.name}"

    def request(self) -> Message:
        """An empty request message of this method's type."""
        message: Message = message_factory.GetMessageClass(self.method.input_type)()
        return message

    def response_class(self) -> type[Message]:
        return message_factory.GetMessageClass(self.method.output_type)


def is_name_field(field: FieldDescriptor) -> bool:
    """A string field holding a resource name, by the API's naming convention:
    ``name``, ``parent``, ``conversation`` or ``*_name``."""
    name = field.name
    return field.type == FieldDescriptor.TYPE_STRING and (
        name in ("name", "parent", "conversation") or name.endswith("_name")
    )


def all_rpcs() -> list[Rpc]:
    """Every method of every service of every ``mnemo.v1`` proto file."""
    rpcs: list[Rpc] = []
    for module_info in pkgutil.iter_modules(mnemo.v1.__path__):
        if not module_info.name.endswith("_pb2"):
            continue
        module = importlib.import_module(f"mnemo.v1.{module_info.name}")
        for service in module.DESCRIPTOR.services_by_name.values():
            rpcs.extend(Rpc(method) for method in service.methods)
    return sorted(rpcs, key=lambda rpc: rpc.path)


def _payloads(requests: Sequence[Message | bytes]) -> list[bytes]:
    return [r if isinstance(r, bytes) else r.SerializeToString() for r in requests]


def call(
    channel: grpc.Channel,
    rpc: Rpc,
    requests: Message | bytes | Sequence[Message | bytes],
    *,
    metadata: Iterable[tuple[str, str]] | None = None,
    timeout: float = CALL_TIMEOUT_S,
) -> list[bytes]:
    """Call ``rpc`` with ``requests`` (one, or several for a client stream) and
    return the serialized responses. Raises ``grpc.RpcError``."""
    payloads = _payloads([requests] if isinstance(requests, Message | bytes) else requests)
    method = rpc.method
    options: dict[str, Any] = {"timeout": timeout, "metadata": tuple(metadata or ())}
    if method.client_streaming and method.server_streaming:
        return list(channel.stream_stream(rpc.path, None, None)(iter(payloads), **options))
    if method.client_streaming:
        return [channel.stream_unary(rpc.path, None, None)(iter(payloads), **options)]
    (payload,) = payloads
    if method.server_streaming:
        return list(channel.unary_stream(rpc.path, None, None)(payload, **options))
    return [channel.unary_unary(rpc.path, None, None)(payload, **options)]
