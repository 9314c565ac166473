"""The standard gRPC health service (``grpc.health.v1.Health``) for grpc.aio.

Unlike ``grpc_health.v1``'s servicer, a shutdown also ends every ``Watch``
stream once it has sent ``NOT_SERVING``: a watcher (gRPC client-side health
checking keeps one open per backend) would otherwise hold the server for its
whole grace period.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ServingStatus = int
"""A ``HealthCheckResponse.ServingStatus`` value."""
SERVING: ServingStatus = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING: ServingStatus = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN: ServingStatus = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


class HealthService(health_pb2_grpc.HealthServicer):  # type: ignore[misc]
    """Statuses per service name (``""`` is the whole server)."""

    def __init__(self) -> None:
        self._statuses: dict[str, ServingStatus] = {}
        self._changed = asyncio.Condition()
        self._shutting_down = False

    def status(self, service: str) -> ServingStatus:
        return self._statuses.get(service, SERVICE_UNKNOWN)

    async def set(self, service: str, status: ServingStatus) -> None:
        """Set a service's status; ignored once shutting down."""
        async with self._changed:
            if not self._shutting_down:
                self._statuses[service] = status
                self._changed.notify_all()

    async def enter_graceful_shutdown(self) -> None:
        """Every service NOT_SERVING for good; watchers are told and their streams end."""
        async with self._changed:
            self._shutting_down = True
            for service in self._statuses:
                self._statuses[service] = NOT_SERVING
            self._changed.notify_all()

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> health_pb2.HealthCheckResponse:
        if request.service not in self._statuses:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=self._statuses[request.service])

    async def Watch(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[health_pb2.HealthCheckResponse]:
        service = request.service
        last: ServingStatus | None = None
        while True:
            async with self._changed:
                await self._changed.wait_for(partial(self._news_for, service, last))
                # Read together: the status sent last is the one shutdown left.
                current, final = self.status(service), self._shutting_down
            if current != last:
                yield health_pb2.HealthCheckResponse(status=current)
                last = current
            if final:
                return

    def _news_for(self, service: str, last: ServingStatus | None) -> bool:
        return self._shutting_down or self.status(service) != last
