"""Fixtures of the client suite: one real Mnemo server on SQLite, both clients, fresh users.

The suite tests the client, not the store, so it runs once, on SQLite (the
store and API suites cover PostgreSQL). One server serves the whole suite;
every test acts for its own new user, so tests never see each other's data.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from mnemo.client import MnemoClient
from tests.client.drivers import CLIENT_KINDS, open_client
from tests.support.server import running_server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that use the suite's server ``sqlite``, as the store suites mark theirs."""
    for item in items:
        if "mnemo_target" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.sqlite)


@pytest.fixture(scope="session")
def mnemo_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of a real Mnemo server over a fresh SQLite database."""
    database = tmp_path_factory.mktemp("client-suite") / "mnemo.db"
    with running_server(f"sqlite:///{database}") as target:
        yield target


@pytest.fixture(params=CLIENT_KINDS)
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(client_kind: str, mnemo_target: str) -> Iterator[MnemoClient]:
    """A ``MnemoClient``, or an ``AsyncMnemoClient`` behind the same methods."""
    with open_client(client_kind, mnemo_target) as opened:
        yield opened


@pytest.fixture
def other_client(client_kind: str, mnemo_target: str) -> Iterator[MnemoClient]:
    """A second client of the other kind: what one writes, the other must read."""
    other = next(kind for kind in CLIENT_KINDS if kind != client_kind)
    with open_client(other, mnemo_target) as opened:
        yield opened


@pytest.fixture
def user() -> str:
    """A user id no other test uses."""
    return f"u-{uuid.uuid4().hex[:16]}"
