"""Which failures to connect ``mnemo serve`` and ``mnemo migrate`` wait out
(``store.engine.reachable.not_up_yet``): libpq's and psycopg's messages of a
server that is not up yet, against those of a server that is up and refuses."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy.exc import OperationalError, ProgrammingError

from mnemo_server.store.engine.reachable import not_up_yet

AT = 'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
NOT_UP = {
    "refused": AT + "Connection refused\n\tIs the server running on that host and accepting "
    "TCP/IP connections?",
    "no socket yet": 'connection failed: connection to server on socket "/run/postgresql/'
    '.s.PGSQL.5432" failed: No such file or directory\n\tIs the server running locally?',
    "unresolved": "failed to resolve host 'db': [Errno -3] Temporary failure in name resolution",
    "unknown name": "failed to resolve host 'db': [Errno -2] Name or service not known",
    "timeout": "connection timeout expired",
    "unreachable": AT + "No route to host",
    "starting up": AT + "FATAL:  the database system is starting up",
    "not yet accepting": AT + "FATAL:  the database system is not yet accepting connections",
    "shutting down": AT + "FATAL:  the database system is shutting down",
    "closed": AT + "server closed the connection unexpectedly",
}
UP_AND_REFUSING = {
    "password": AT + 'FATAL:  password authentication failed for user "mnemo"',
    "role": AT + 'FATAL:  role "nobody" does not exist',
    "database": AT + 'FATAL:  database "nope" does not exist',
    "hba": AT + 'FATAL:  no pg_hba.conf entry for host "10.0.0.9", user "mnemo"',
    "certificate": 'connection failed: could not open certificate file "/x.crt": No such file '
    "or directory",
    "too many": AT + "FATAL:  sorry, too many clients already",
}


def _failed(message: str) -> OperationalError:
    return OperationalError("connect", {}, psycopg.OperationalError(message))


@pytest.mark.parametrize("message", NOT_UP.values(), ids=NOT_UP.keys())
def test_a_server_that_is_not_up_yet_is_waited_for(message: str) -> None:
    assert not_up_yet(_failed(message))


@pytest.mark.parametrize("message", UP_AND_REFUSING.values(), ids=UP_AND_REFUSING.keys())
def test_a_server_that_answers_is_not(message: str) -> None:
    assert not not_up_yet(_failed(message))


def test_only_connection_failures_count() -> None:
    refused = NOT_UP["refused"]
    assert not not_up_yet(ProgrammingError("select", {}, psycopg.ProgrammingError(refused)))
    assert not not_up_yet(ValueError(refused))
