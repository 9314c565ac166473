"""Server reflection under both service names, ``grpc.reflection.v1`` and
``grpc.reflection.v1alpha``, so that every reflection client works
(``grpcurl``, Postman and current gRPC tooling ask for ``v1`` first; older
ones know only ``v1alpha``).

grpcio-reflection ships only ``v1alpha``. The ``v1`` messages are
wire-identical to it (``v1`` is ``v1alpha`` renamed: same fields, same
numbers, same types), so one servicer answers both names: ``v1`` calls are
decoded and encoded with the ``v1alpha`` message classes. For ``v1`` to
describe itself like any listed service, its file
(``grpc/reflection/v1/reflection.proto``) is added to the descriptor pool,
built from the ``v1alpha`` file by renaming the package, unless something
already registered it.

grpcio-reflection answers ``file_containing_symbol`` from the pool, whose
lookup (upb) finds services, messages, fields and enums but not methods:
``grpcurl describe mnemo.v1.MemoryService.CreateMemory`` got ``Symbol not
found``. A method's name is resolved here to its service's file.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha
from grpc_reflection.v1alpha._async import ReflectionServicer as _V1AlphaServicer

V1ALPHA_SERVICE = v1alpha.DESCRIPTOR.services_by_name["ServerReflection"].full_name
V1_SERVICE = "grpc.reflection.v1.ServerReflection"
SERVICE_NAMES = (V1_SERVICE, V1ALPHA_SERVICE)
"""The reflection services a server built here lists and serves."""

V1_FILE = "grpc/reflection/v1/reflection.proto"
_METHOD = "ServerReflectionInfo"


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """``v1alpha``'s file with its package renamed to ``grpc.reflection.v1``."""
    proto = descriptor_pb2.FileDescriptorProto()
    v1alpha.DESCRIPTOR.CopyToProto(proto)
    old, new = f".{v1alpha.DESCRIPTOR.package}.", ".grpc.reflection.v1."
    proto.name, proto.package = V1_FILE, "grpc.reflection.v1"
    proto.options.Clear()
    proto.options.java_package = "io.grpc.reflection.v1"
    proto.options.java_multiple_files = True
    proto.options.java_outer_classname = "ServerReflectionProto"
    proto.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(old):
                field.type_name = new + field.type_name[len(old) :]
    for method in proto.service[0].method:
        method.input_type = new + method.input_type[len(old) :]
        method.output_type = new + method.output_type[len(old) :]
    return proto


def register_v1_descriptor(pool: descriptor_pool.DescriptorPool | None = None) -> None:
    """Add ``V1_FILE`` to ``pool`` (the default pool) unless it is there."""
    pool = pool or descriptor_pool.Default()
    try:
        pool.FindFileByName(V1_FILE)
    except KeyError:
        pool.AddSerializedFile(_v1_file().SerializeToString())


class ReflectionServicer(_V1AlphaServicer):  # type: ignore[misc]  # untyped (no py.typed)
    """grpcio-reflection's asyncio servicer, resolving method names too."""

    def __init__(self, service_names: Iterable[str]) -> None:
        super().__init__(service_names)
        self._services_pool = descriptor_pool.Default()

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        response = super()._file_containing_symbol(request, fully_qualified_name)
        if response.HasField("error_response"):
            service, _, method = fully_qualified_name.rpartition(".")
            if self._is_method(service, method):
                return super()._file_containing_symbol(request, service)
        return response

    def _is_method(self, service: str, method: str) -> bool:
        try:
            return method in self._services_pool.FindServiceByName(service).methods_by_name
        except KeyError:
            return False


def enable_server_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection of ``service_names`` (which should include
    ``SERVICE_NAMES``) under both reflection service names on ``server``."""
    register_v1_descriptor()
    servicer = ReflectionServicer(service_names)
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=v1alpha.ServerReflectionRequest.FromString,
        response_serializer=v1alpha.ServerReflectionResponse.SerializeToString,
    )
    for name in SERVICE_NAMES:
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(name, {_METHOD: handler}),)
        )
