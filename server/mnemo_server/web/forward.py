"""Forward one call to the gRPC port of this process, bytes in, bytes out.

The gRPC server gets a private listener on a Unix socket in a fresh
directory only this process's user can enter (``InternalListener``); the web
port calls it over one ``grpc.aio`` channel with generic method handlers
(no serializers: the request and every response stay opaque bytes). The
gRPC server therefore runs the same interceptors and servicers for both ports.

Every call is made as unary-request, streaming-response: a method's kind is
not on the gRPC wire, so a unary method answers with its one message and the
same code serves both kinds.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc

from mnemo_server.web.metadata import Metadata, Outcome, as_metadata


@dataclass(frozen=True)
class InitialMetadata:
    """The call's response headers (first event of every call)."""

    metadata: Metadata


@dataclass(frozen=True)
class ResponseMessage:
    """One binary response message."""

    data: bytes


@dataclass(frozen=True)
class CallEnded:
    """The call's status and trailing metadata (last event of every call)."""

    outcome: Outcome


CallEvent = InitialMetadata | ResponseMessage | CallEnded


class InternalListener:
    """A Unix socket the gRPC server also listens on, for the web port only."""

    def __init__(self) -> None:
        # mkdtemp makes the directory mode 0700: only this user can connect.
        self._directory = Path(tempfile.mkdtemp(prefix="mnemo-web-"))
        self.target = f"unix:{self._directory / 'grpc.sock'}"
        # Also removed if the server fails to start before ``remove`` is called.
        self._removal = weakref.finalize(self, shutil.rmtree, self._directory, True)

    def attach(self, server: grpc.aio.Server) -> None:
        """Listen on the socket too (call before the server starts)."""
        server.add_insecure_port(self.target)

    def remove(self) -> None:
        self._removal()


class Forwarder:
    """Calls methods of the gRPC port by path with opaque request bytes."""

    def __init__(self, target: str, max_request_bytes: int) -> None:
        self._channel = grpc.aio.insecure_channel(
            target,
            options=(
                ("grpc.max_send_message_length", max_request_bytes),
                ("grpc.max_receive_message_length", -1),
            ),
        )

    async def call(
        self, path: str, request: bytes, metadata: Metadata, timeout: float | None
    ) -> AsyncIterator[CallEvent]:
        """The events of one call: ``InitialMetadata``, ``ResponseMessage``s, ``CallEnded``.

        Never raises for an RPC error (it is the ``CallEnded`` outcome); the
        call is cancelled if the consumer stops iterating (the web client went
        away).
        """
        multicallable = self._channel.unary_stream(path, None, None)
        call = multicallable(request, metadata=metadata, timeout=timeout)
        started = False
        try:
            initial = await call.initial_metadata()
            started = True
            yield InitialMetadata(as_metadata(initial))
            async for message in call:
                yield ResponseMessage(message)
            code = await call.code()
            yield CallEnded(
                Outcome.of_call(code, await call.details(), await call.trailing_metadata())
            )
        except grpc.aio.AioRpcError as error:
            if not started:
                yield InitialMetadata(as_metadata(error.initial_metadata()))
            yield CallEnded(
                Outcome.of_call(error.code(), error.details(), error.trailing_metadata())
            )
        finally:
            call.cancel()

    async def close(self) -> None:
        await self._channel.close(None)
