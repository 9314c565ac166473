"""Graceful stop of an in-process server: health watchers are told and released."""

from __future__ import annotations

import threading

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.server import ServerThread, server_settings

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICES = ("", "mnemo.v1.ConversationService", "mnemo.v1.WorkingMemoryService")


class Watcher(threading.Thread):
    """Reads one health Watch stream to its end."""

    def __init__(self, stub: health_pb2_grpc.HealthStub, service: str) -> None:
        super().__init__(daemon=True)
        self.call = stub.Watch(health_pb2.HealthCheckRequest(service=service), timeout=60)
        self.statuses: list[int] = []
        self.started_watching = threading.Event()

    def run(self) -> None:
        for response in self.call:
            self.statuses.append(response.status)
            self.started_watching.set()


def test_stop_turns_health_not_serving_and_ends_watch_streams(database_url: str) -> None:
    thread = ServerThread(server_settings(database_url))
    target = thread.start()
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watchers = [Watcher(stub, service) for service in SERVICES]
        for watcher in watchers:
            watcher.start()
            assert watcher.started_watching.wait(30)
        # A long grace: stopping must not wait for the watchers to give up.
        thread.stop(grace=60)
        for watcher in watchers:
            watcher.join(30)
            assert not watcher.is_alive()
            assert watcher.statuses == [SERVING, NOT_SERVING], (
                watcher.call.code(),
                watcher.call.details(),
            )
            assert watcher.call.code() is grpc.StatusCode.OK
