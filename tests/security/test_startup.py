"""What ``mnemo serve`` and ``mnemo mcp`` refuse at start: exit code 2 and one
line naming the flags and the fix, never a traceback.

``--auth none`` with ``--web-cors-origins '*'`` lets any page on the web read,
change and erase every user's memories from a browser that can reach the web
port. ``mnemo serve`` refuses it unless ``--allow-unauthenticated-any-origin
true`` says it is meant; then it serves and logs a warning at start.

A key, certificate or token file that is a directory, missing or unreadable;
and an HS256 secret that is a documented placeholder, shaped like one or too
short (the line says how to make a real one).
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
from pathlib import Path

import pytest
import yaml

from mnemo_server.auth.keys import secret_file_key
from mnemo_server.cli.main import main
from mnemo_server.config import resolve
from tests.support.certificates import CertificateAuthority
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


# ------------------------------------------------- files that cannot be used
#
# A key, certificate or token file named by a flag that is a directory, is
# missing or cannot be read stops the command with one line naming the flag
# and the file, exit code 2: never a traceback.

ROOT = Path(__file__).resolve().parents[2]
AS_ROOT = os.geteuid() == 0
JWT = ["--auth", "jwt", "--jwt-audience", "mnemo"]
REMOTE_EMBEDDER = ["--embedder", "openai:m", "--embedder-url", "http://127.0.0.1:9"]
MCP_HTTP = ["mcp", "--transport", "http", "--listen", "127.0.0.1:0", "--user", "u1"]


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv, env={}) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err


def _unusable_paths(tmp_path: Path) -> dict[str, Path]:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    regular = tmp_path / "regular"
    regular.write_text("x")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00 not UTF-8")
    return {
        "directory": directory,
        "missing": tmp_path / "missing",
        "through a file": regular / "file",
        "not UTF-8": binary,
    }


def _serve_args(flag: str, path: Path, tmp_path: Path) -> list[str]:
    """``mnemo serve`` with ``flag`` naming ``path`` and what it needs beside it."""
    args = ["serve", "--data-dir", str(tmp_path / "data"), "--listen", "127.0.0.1:0"]
    if flag.startswith("--jwt-"):
        return [*args, *JWT, flag, str(path)]
    if flag == "--embedder-key-file":
        return [*args, *REMOTE_EMBEDDER, "--embedder-dimensions", "8", flag, str(path)]
    ca = CertificateAuthority("test CA")
    cert, key = ca.issue("localhost", server=True).write(tmp_path, "server")
    files = {
        "--tls-cert-file": cert,
        "--tls-key-file": key,
        "--tls-client-ca-file": ca.write(tmp_path),
    }
    files[flag] = path
    return args + [part for given, file in files.items() for part in (given, str(file))]


SERVE_FILE_FLAGS = (
    "--jwt-hs256-secret-file",
    "--jwt-public-key-file",
    "--jwt-jwks-file",
    "--tls-cert-file",
    "--tls-key-file",
    "--tls-client-ca-file",
    "--embedder-key-file",
)


@pytest.mark.parametrize("flag", SERVE_FILE_FLAGS)
def test_serve_names_the_flag_of_an_unusable_file(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for case, path in _unusable_paths(tmp_path).items():
        if case == "not UTF-8":
            # A binary secret is a secret; the PEM and JSON files say what they lack; a
            # binary --embedder-key-file is embedders.remote's (its own tests).
            continue
        err = _one_line_exit_2(_serve_args(flag, path, tmp_path), capsys)
        assert flag in err and str(path) in err, (case, err)


@pytest.mark.skipif(AS_ROOT, reason="root reads a file of mode 000")
@pytest.mark.parametrize("flag", SERVE_FILE_FLAGS)
def test_serve_names_the_flag_of_an_unreadable_file(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unreadable = tmp_path / "unreadable"
    unreadable.write_text("x")
    unreadable.chmod(0)
    err = _one_line_exit_2(_serve_args(flag, unreadable, tmp_path), capsys)
    assert flag in err and "ermission denied" in err, err


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.timeout(30)  # a FIFO must not block the command until a writer comes
def test_mcp_http_token_file_that_cannot_be_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good-token"
    good.write_text("t" * 43 + "\n")
    good.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(good)
    binary = _unusable_paths(tmp_path)["not UTF-8"]
    binary.chmod(0o600)
    regular = tmp_path / "regular"
    expected = {
        "is a directory": tmp_path / "a-directory",
        "symbolic link": link,
        "not UTF-8": binary,
        "not a regular file": _fifo(tmp_path),
        "not a directory": regular / "token",
    }
    for says, path in expected.items():
        err = _one_line_exit_2([*MCP_HTTP, "--http-token-file", str(path)], capsys)
        assert "--http-token-file" in err and says in err and str(path) in err, err
    assert good.read_text() == "t" * 43 + "\n"  # read through the link, never rewritten


@pytest.mark.skipif(AS_ROOT, reason="root writes into a directory of mode 500")
def test_mcp_http_token_file_that_cannot_be_made_or_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    err = _one_line_exit_2([*MCP_HTTP, "--http-token-file", str(locked / "token")], capsys)
    assert "--http-token-file" in err and "ermission denied" in err, err
    unreadable = tmp_path / "unreadable"
    unreadable.write_text("t" * 43)
    unreadable.chmod(0)
    err = _one_line_exit_2([*MCP_HTTP, "--http-token-file", str(unreadable)], capsys)
    assert "--http-token-file" in err and "ermission denied" in err, err


def test_mcp_token_file_that_cannot_be_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for case, path in _unusable_paths(tmp_path).items():
        err = _one_line_exit_2(["mcp", "--token-file", str(path)], capsys)
        assert "--token-file" in err and str(path) in err, (case, err)


# ------------------------------------------------- placeholder secrets
#
# The Kubernetes Secret ships a placeholder for the HS256 secret; a server that
# accepted it would verify tokens anyone who read the manifest can sign.


def _manifest_placeholder() -> str:
    documents = yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "mnemo.yaml").read_text())
    (secret,) = [d for d in documents if d and d.get("kind") == "Secret"]
    value: str = secret["stringData"]["jwt-secret"]
    return value


PLACEHOLDERS = {
    "the Kubernetes Secret's": _manifest_placeholder(),
    "change-me": "change-me-to-48-random-bytes-in-base64\n",
    "changeme": "CHANGEME_CHANGEME_CHANGEME_CHANGEME\n",
    "example": "example-hs256-secret-of-at-least-32-bytes\n",
    "placeholder": "placeholder placeholder placeholder\n",
    "your secret": "<your-hs256-secret-of-48-random-bytes>\n",
    "secret repeated": "secretsecretsecretsecretsecretsecret\n",
    "secret alone": "secret\n",
    "too short": "c2hvcnQgYnV0IHJhbmRvbQ==\n",
}


@pytest.mark.timeout(60)  # before the fix, the server started and served
@pytest.mark.parametrize("name", PLACEHOLDERS)
def test_a_placeholder_jwt_secret_is_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "jwt-secret"
    secret.write_text(PLACEHOLDERS[name])
    args = ["serve", "--data-dir", str(tmp_path / "data"), "--listen", "127.0.0.1:0", *JWT]
    err = _one_line_exit_2([*args, "--jwt-hs256-secret-file", str(secret)], capsys)
    assert "--jwt-hs256-secret-file" in err, err
    assert "openssl rand -base64 48" in err, err  # how to make a real one
    if len(PLACEHOLDERS[name].strip()) > len("secret"):
        assert PLACEHOLDERS[name].strip() not in err  # nothing of the file is printed


@pytest.mark.timeout(60)
def test_the_container_s_placeholder_secret_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the image runs it: every setting from the environment."""
    secret = tmp_path / "mnemo-jwt-secret"
    secret.write_text(_manifest_placeholder())
    env = {
        "MNEMO_LISTEN": "127.0.0.1:0",
        "MNEMO_DATA_DIR": str(tmp_path / "data"),
        "MNEMO_AUTH": "jwt",
        "MNEMO_JWT_AUDIENCE": "mnemo",
        "MNEMO_JWT_HS256_SECRET_FILE": str(secret),
    }
    assert main(["serve"], env=env) == 2
    err = capsys.readouterr().err
    assert "placeholder" in err and "openssl rand -base64 48" in err, err


def test_random_secrets_are_accepted(tmp_path: Path) -> None:
    secret = tmp_path / "jwt-secret"
    for _ in range(200):
        made = base64.b64encode(secrets.token_bytes(48))  # openssl rand -base64 48
        secret.write_bytes(made + b"\n")
        assert secret_file_key(secret).key.key == made
    raw = secrets.token_bytes(32)
    while raw.strip() != raw:  # a secret file's surrounding whitespace is not the secret's
        raw = secrets.token_bytes(32)
    secret.write_bytes(raw)  # raw bytes are a secret too
    secret_file_key(secret)
