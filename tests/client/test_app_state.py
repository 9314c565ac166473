"""The app state methods of the client against a real server."""

from __future__ import annotations

import uuid

import pytest

from mnemo.client import EtagMismatchError, InvalidArgumentError, MnemoClient, app_state_value


def test_read_merge_and_etag(client: MnemoClient, other_client: MnemoClient) -> None:
    app = f"client-app-{uuid.uuid4().hex[:8]}"
    assert app_state_value(client.get_app_state(app)) == {}
    first = client.update_app_state(app, {"motd": "hi", "n": 1})
    second = other_client.update_app_state(app, {"n": 2}, etag=first.etag)
    assert app_state_value(client.get_app_state(app)) == {"motd": "hi", "n": 2}
    with pytest.raises(EtagMismatchError):
        client.update_app_state(app, {"n": 3}, etag=first.etag)
    assert client.get_app_state(app).etag == second.etag
    with pytest.raises(InvalidArgumentError):
        client.get_app_state("bad/app")
