"""Services of the v1 contract that later versions implement.

Every RPC of these services answers ``UNIMPLEMENTED`` with reason
``NOT_IMPLEMENTED`` and metadata naming the capability and the method. The
servicers are built from the service descriptors, so an RPC added to the
protos is covered without touching this module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from mnemo_server.domain.errors import NotImplementedYet


@dataclass(frozen=True)
class PendingService:
    """A generated service and the capability it will bring."""

    descriptor: ServiceDescriptor
    servicer_base: type
    add_to_server: Callable[[Any, grpc.aio.Server], None]
    capability: str


# Empty since SyncService is served (api.sync); a service added to the
# contract before its implementation goes here.
PENDING_SERVICES: tuple[PendingService, ...] = ()


def not_implemented(service: PendingService, method: MethodDescriptor) -> NotImplementedYet:
    full_method = f"/{service.descriptor.full_name}/{method.name}"
    return NotImplementedYet(
        f"{method.name} is not implemented by this server yet: {service.capability} "
        "comes in a later version of Mnemo",
        metadata={"capability": service.capability, "method": full_method},
    )


def _handler(service: PendingService, method: MethodDescriptor) -> Callable[..., Any]:
    if method.server_streaming:

        async def stream(self: object, request: Any, context: Any) -> AsyncIterator[Any]:
            error = not_implemented(service, method)
            if error:  # always: the yield only makes this an async generator
                raise error
            yield None

        return stream

    async def unary(self: object, request: Any, context: Any) -> Any:
        raise not_implemented(service, method)

    return unary


def unimplemented_servicer(service: PendingService) -> object:
    """A servicer whose every RPC raises ``NotImplementedYet``."""
    methods = {m.name: _handler(service, m) for m in service.descriptor.methods}
    cls = type(f"Unimplemented{service.descriptor.name}", (service.servicer_base,), methods)
    return cls()


def add_unimplemented_services(server: grpc.aio.Server) -> tuple[str, ...]:
    """Register every pending service; returns their full names."""
    for service in PENDING_SERVICES:
        service.add_to_server(unimplemented_servicer(service), server)
    return tuple(s.descriptor.full_name for s in PENDING_SERVICES)
