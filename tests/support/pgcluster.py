"""Throwaway PostgreSQL servers for the test suite.

``ThrowawayPostgres`` gives tests a PostgreSQL server and a SQLAlchemy URL for it::

    with ThrowawayPostgres() as pg:
        create_database(pg.url, "t1")
        engine = sqlalchemy.create_engine(database_url(pg.url, "t1"))
        ...

- If the environment variable ``MNEMO_TEST_POSTGRES_URL`` is set (for example
  ``postgresql://postgres@127.0.0.1:5432/postgres``), that server is used and
  nothing is started or stopped.
- Otherwise a new cluster is made with the newest ``/usr/lib/postgresql/<version>/bin``
  (or ``MNEMO_TEST_POSTGRES_BINDIR``): ``initdb`` into a temporary directory
  (trust authentication, UTF8, locale C), started with ``pg_ctl`` on a free
  port of 127.0.0.1 with durability switched off for speed, and on exit stopped
  (``pg_ctl stop -m immediate``) and deleted. When running as root (CI does),
  the server runs as the ``postgres`` OS user through ``runuser``, since
  PostgreSQL refuses to run as root. An ``atexit`` hook stops a cluster that
  was not stopped, and clusters left behind by a killed test run are removed
  the next time one starts.

The URL is ``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres``; the
psycopg (3) driver serves both sync and asyncio SQLAlchemy engines.

This module is also a pytest plugin (pyproject.toml loads it with
``-p tests.support.pgcluster``): it adds a report-header line saying which
PostgreSQL the run will use, and prints one line, past pytest's output
capture, when a cluster starts.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

__all__ = [
    "BINDIR_ENV",
    "URL_ENV",
    "PostgresUnavailable",
    "ThrowawayPostgres",
    "create_database",
    "database_url",
    "drop_database",
    "find_bindir",
    "libpq_url",
]

URL_ENV = "MNEMO_TEST_POSTGRES_URL"
BINDIR_ENV = "MNEMO_TEST_POSTGRES_BINDIR"
PG_ROOT = Path("/usr/lib/postgresql")
OS_USER = "postgres"
DB_USER = "postgres"
DIR_PREFIX = "mnemo-pg-"
OWNER_FILE = "owner.pid"

# Server settings for a test cluster: no durability (a crash loses a throwaway
# cluster anyway), enough connections for parallel pools.
DEFAULT_SETTINGS: Mapping[str, str] = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
}

_START_TIMEOUT_S = 60
_STOP_TIMEOUT_S = 30
_INITDB_TIMEOUT_S = 120
_PORT_ATTEMPTS = 5


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be found, made or started."""


# --------------------------------------------------------------------- helpers


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.name))


def find_bindir() -> Path:
    """The PostgreSQL server binaries to use: ``$MNEMO_TEST_POSTGRES_BINDIR``,
    else the newest ``/usr/lib/postgresql/<version>/bin``, else the directory
    of ``pg_ctl`` on ``PATH``."""
    candidates: list[Path] = []
    if env := os.environ.get(BINDIR_ENV):
        candidates.append(Path(env))
    elif PG_ROOT.is_dir():
        versions = [p for p in PG_ROOT.iterdir() if re.fullmatch(r"\d+(\.\d+)?", p.name)]
        candidates.extend(p / "bin" for p in sorted(versions, key=_version_key, reverse=True))
    if not candidates and (pg_ctl := shutil.which("pg_ctl")):
        candidates.append(Path(pg_ctl).resolve().parent)
    for bindir in candidates:
        if all((bindir / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return bindir
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found in "
        f"{BINDIR_ENV}, {PG_ROOT}/<version>/bin or PATH: install them "
        f"(apt-get install postgresql) or set {URL_ENV} to a server to use"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://...``) as a libpq connection URI."""
    return re.sub(r"^postgres(?:ql)?(?:\+\w+)?://", "postgresql://", url)


def database_url(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name``."""
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def _sqlalchemy_url(url: str) -> str:
    """A user-supplied PostgreSQL URL with the psycopg driver, unless it names one."""
    return re.sub(r"^postgres(?:ql)?://", "postgresql+psycopg://", url)


def create_database(url: str, name: str, template: str | None = None) -> None:
    """``CREATE DATABASE name [TEMPLATE template]`` on the server of ``url``
    (a SQLAlchemy or libpq URL; its own database is only used to connect)."""
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute(statement)


def drop_database(url: str, name: str) -> None:
    """``DROP DATABASE IF EXISTS name WITH (FORCE)`` (ends its open connections)
    on the server of ``url``."""
    statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute(statement)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- the cluster


class ThrowawayPostgres:
    """A PostgreSQL server for tests; see the module docstring.

    Use as a context manager, or call ``start()`` and ``stop()``. ``url`` is a
    SQLAlchemy URL (``postgresql+psycopg://...``) of the ``postgres`` database,
    superuser ``postgres``, no password.
    """

    def __init__(
        self,
        *,
        bindir: Path | None = None,
        settings: Mapping[str, str] | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self._bindir = bindir
        self._settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self._base_dir = base_dir
        self._url: str | None = None
        self._dir: Path | None = None
        self._owner_pid: int | None = None
        self._run_as: pwd.struct_passwd | None = None
        self._start_options = ""
        self.port: int | None = None
        self.version: str | None = None
        self.external = False

    # -- public API

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("ThrowawayPostgres is not started")
        return self._url

    @property
    def data_dir(self) -> Path | None:
        """The cluster's data directory (None for an external server)."""
        return None if self._dir is None else self._dir / "data"

    def start(self) -> Self:
        if self._url is not None:
            return self
        external = os.environ.get(URL_ENV)
        if external:
            self.external = True
            self._url = _sqlalchemy_url(external)
            self.version = self._server_version()
            where = make_url(self._url)
            _announce(
                f"PostgreSQL {self.version} at {where.host}:{where.port or 5432} (from ${URL_ENV})"
            )
            return self
        self._start_cluster()
        return self

    def stop(self) -> None:
        """Stop and delete the cluster (a no-op for an external server or when
        not started, and in a forked child of the process that started it)."""
        atexit.unregister(self.stop)
        if self._dir is None or self._owner_pid != os.getpid():
            self._url = None
            return
        tmp, self._dir, self._url = self._dir, None, None
        try:
            self._pg_ctl_stop(tmp / "data")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def shut_down(self, mode: str = "fast") -> None:
        """Stop the running server with ``pg_ctl stop -m mode`` (``smart``,
        ``fast``: end the sessions, checkpoint; ``immediate``: like a crash,
        the next start recovers from WAL) and keep the cluster, so that
        ``start_again`` brings it back. Only for a cluster this process made."""
        data = self._own_data_dir()
        bindir = self._bindir or find_bindir()
        self._run_checked(
            [str(bindir / "pg_ctl"), "stop", "-D", str(data), "-m", mode, "-w"]
            + ["-t", str(_STOP_TIMEOUT_S)],
            timeout=_STOP_TIMEOUT_S + 10,
        )

    def start_again(self) -> None:
        """Start the cluster stopped by ``shut_down`` on the same port and settings."""
        data = self._own_data_dir()
        bindir = self._bindir or find_bindir()
        assert self._dir is not None
        self._run_checked(
            [
                str(bindir / "pg_ctl"),
                "start",
                "-D",
                str(data),
                "-l",
                str(self._dir / "postgres.log"),
            ]
            + ["-w", "-t", str(_START_TIMEOUT_S), "-o", self._start_options],
            timeout=_START_TIMEOUT_S + 10,
        )

    def restart(self, mode: str = "fast") -> None:
        """``shut_down(mode)`` then ``start_again()``."""
        self.shut_down(mode)
        self.start_again()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals

    def _own_data_dir(self) -> Path:
        if self._dir is None or self.external or self._owner_pid != os.getpid():
            raise PostgresUnavailable(
                "only a cluster this process started can be stopped and started"
            )
        return self._dir / "data"

    def _server_version(self) -> str:
        with psycopg.connect(libpq_url(self.url), connect_timeout=10) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        assert row is not None
        return str(row[0]).split()[0]

    def _run(self, argv: Sequence[str], *, timeout: float) -> tuple[int, str]:
        """Run a PostgreSQL tool (as the postgres OS user when we are root);
        return its exit code and output."""
        cmd = list(argv)
        if self._run_as is not None:
            cmd = ["runuser", "-u", self._run_as.pw_name, "--", *cmd]
        proc = subprocess.run(
            cmd,
            cwd=self._dir or "/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        return proc.returncode, proc.stdout

    def _run_checked(self, argv: Sequence[str], *, timeout: float) -> None:
        returncode, output = self._run(argv, timeout=timeout)
        if returncode != 0:
            raise PostgresUnavailable(
                f"{shlex.join(argv)} failed with exit code {returncode}:\n{output}"
            )

    def _pg_ctl_stop(self, data: Path) -> None:
        bindir = self._bindir or find_bindir()
        if (data / "postmaster.pid").exists():
            self._run(
                [
                    str(bindir / "pg_ctl"),
                    "stop",
                    "-D",
                    str(data),
                    "-m",
                    "immediate",
                    "-w",
                    "-t",
                    str(_STOP_TIMEOUT_S),
                ],
                timeout=_STOP_TIMEOUT_S + 10,
            )

    def _start_cluster(self) -> None:
        bindir = self._bindir = self._bindir or find_bindir()
        if os.geteuid() == 0:
            try:
                self._run_as = pwd.getpwnam(OS_USER)
            except KeyError:
                raise PostgresUnavailable(
                    f"running as root, but there is no {OS_USER!r} OS user to run "
                    f"PostgreSQL as (install the postgresql package, or set {URL_ENV})"
                ) from None
        # Under /tmp by default: the postgres user must reach it, and the Unix
        # socket path must stay short.
        base = self._base_dir or Path("/tmp" if self._run_as else tempfile.gettempdir())
        self._remove_stale_clusters(base)

        tmp = Path(tempfile.mkdtemp(prefix=DIR_PREFIX, dir=base))
        self._dir = tmp
        self._owner_pid = os.getpid()
        (tmp / OWNER_FILE).write_text(f"{self._owner_pid}\n")
        atexit.register(self.stop)
        try:
            if self._run_as is not None:
                os.chown(tmp, self._run_as.pw_uid, self._run_as.pw_gid)
            data = tmp / "data"
            self._run_checked(
                [
                    str(bindir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    DB_USER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                timeout=_INITDB_TIMEOUT_S,
            )
            self._pg_ctl_start(bindir, tmp, data)
            self.version = self._server_version()
        except BaseException:
            self.stop()
            raise
        _announce(
            f"PostgreSQL {self.version} throwaway cluster on 127.0.0.1:{self.port} "
            f"({bindir}, data in {data})"
        )

    def _pg_ctl_start(self, bindir: Path, tmp: Path, data: Path) -> None:
        log = tmp / "postgres.log"
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            port = _free_port()
            options = [f"-p {port}", f"-k {shlex.quote(str(tmp))}"]
            options += [f"-c {k}={shlex.quote(v)}" for k, v in self._settings.items()]
            returncode, output = self._run(
                [
                    str(bindir / "pg_ctl"),
                    "start",
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    str(_START_TIMEOUT_S),
                    "-o",
                    " ".join(options),
                ],
                timeout=_START_TIMEOUT_S + 10,
            )
            if returncode == 0:
                self.port = port
                self._start_options = " ".join(options)
                self._url = f"postgresql+psycopg://{DB_USER}@127.0.0.1:{port}/postgres"
                return
            server_log = log.read_text(errors="replace") if log.exists() else ""
            if "could not bind" in server_log and attempt < _PORT_ATTEMPTS:
                self._pg_ctl_stop(data)
                log.unlink(missing_ok=True)
                continue  # the port was taken between choosing and binding it
            raise PostgresUnavailable(
                f"pg_ctl start failed (exit code {returncode}):\n{output}\n"
                f"--- {log} ---\n{server_log[-4000:]}"
            )
        raise AssertionError("unreachable")

    def _remove_stale_clusters(self, base: Path) -> None:
        """Stop and delete clusters whose creating process is gone (a test run
        that was killed before its atexit hook ran)."""
        for tmp in base.glob(f"{DIR_PREFIX}*"):
            owner = tmp / OWNER_FILE
            try:
                pid = int(owner.read_text().strip())
            except (OSError, ValueError):
                continue
            if _pid_alive(pid):
                continue
            with contextlib.suppress(Exception):
                self._pg_ctl_stop(tmp / "data")
            shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------- pytest plugin

_pytest_config: pytest.Config | None = None


def _announce(line: str) -> None:
    """Show ``line`` on the terminal even while pytest captures output."""
    config = _pytest_config
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter") if config else None
    if config is None or reporter is None:
        print(line, file=sys.stderr, flush=True)
        return
    capture: Any = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.ensure_newline()
        reporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    global _pytest_config
    _pytest_config = config


def pytest_unconfigure(config: pytest.Config) -> None:
    global _pytest_config
    _pytest_config = None


def pytest_report_header(config: pytest.Config) -> str:
    if external := os.environ.get(URL_ENV):
        shown = make_url(_sqlalchemy_url(external)).render_as_string(hide_password=True)
        return f"postgresql: {shown} (from ${URL_ENV})"
    try:
        bindir = find_bindir()
    except PostgresUnavailable as exc:
        return f"postgresql: unavailable: {exc}"
    return f"postgresql: throwaway clusters from {bindir} (started by the tests that need one)"
