"""A server that would hand every user's data to every web site refuses to start.

``--auth none`` with ``--web-cors-origins '*'`` lets any page on the web read,
change and erase every user's memories from a browser that can reach the web
port. ``mnemo serve`` exits 2 with one line naming the flags and the fix, unless
``--allow-unauthenticated-any-origin true`` says it is meant; then it serves and
logs a warning at start.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mnemo_server.cli.main import main
from mnemo_server.config import resolve
from tests.support.server import ServerThread, server_settings

pytestmark = pytest.mark.sqlite


def test_any_origin_without_auth_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["serve", "--data-dir", str(tmp_path), "--web-listen", "127.0.0.1:0"]
    assert main([*args, "--web-cors-origins", "*"], env={}) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    for named in ("--auth none", "--web-cors-origins", "--auth jwt"):
        assert named in err, err
    assert "--allow-unauthenticated-any-origin" in err
    # The environment spells the same thing.
    env = {"MNEMO_WEB_LISTEN": "127.0.0.1:0", "MNEMO_WEB_CORS_ORIGINS": "*"}
    assert main(["serve", "--data-dir", str(tmp_path)], env=env) == 2
    assert "--web-cors-origins" in capsys.readouterr().err


def test_the_override_serves_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    flags = {
        "web_listen": "127.0.0.1:0",
        "web_cors_origins": "*",
        "allow_unauthenticated_any_origin": "true",
    }
    settings = resolve(flags, {})
    overrides = {
        "web_listen": settings.web_listen,
        "web_cors_origins": settings.web_cors_origins,
        "allow_unauthenticated_any_origin": settings.allow_unauthenticated_any_origin,
    }
    url = f"sqlite:///{tmp_path / 'mnemo.db'}"
    with caplog.at_level(logging.WARNING, logger="mnemo"):
        thread = ServerThread(server_settings(url, **overrides))
        thread.start()
        thread.stop(grace=1)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("any web site" in message for message in warnings), warnings
