"""The methods the web port serves: looked up by HTTP path in the descriptor pool."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import MethodDescriptor


@dataclass(frozen=True)
class WebMethod:
    """One RPC: its path (``/mnemo.v1.MemoryService/RecallMemories``) and messages."""

    path: str
    request_class: type[Any]
    response_class: type[Any]
    client_streaming: bool
    server_streaming: bool

    @classmethod
    def of(cls, method: MethodDescriptor) -> WebMethod:
        return cls(
            path=f"/{method.containing_service.full_name}/{method.name}",
            request_class=message_factory.GetMessageClass(method.input_type),
            response_class=message_factory.GetMessageClass(method.output_type),
            client_streaming=method.client_streaming,
            server_streaming=method.server_streaming,
        )


def method_table(service_names: Iterable[str]) -> dict[str, WebMethod]:
    """Every method of the named services (as registered in the default pool), by path.

    Raises ``KeyError`` for a service whose descriptor was never imported.
    """
    pool = descriptor_pool.Default()
    table: dict[str, WebMethod] = {}
    for name in service_names:
        for method in pool.FindServiceByName(name).methods:
            web_method = WebMethod.of(method)
            table[web_method.path] = web_method
    return table
