"""Migrations: an empty database migrates to head, the migrated schema is the
one ``store.schema`` describes, a stale schema is refused with the command that
fixes it, another application's database and a newer schema are never
migrated behind the operator's back, and data survives an upgrade; on every
backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import make_url

from mnemo_server.cli import main as cli
from mnemo_server.domain.models import ConversationKey
from mnemo_server.store import migrate
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.engine.engines import migration_engine
from mnemo_server.store.schema import include_name, include_object_on, metadata
from mnemo_server.store.transactions.database import open_database
from tests.store.samples import exchange, messages
from tests.store.writes import append_messages, save_state


def tables(url: str) -> set[str]:
    engine = migration_engine(url)
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_an_empty_database_migrates_to_head(
    empty_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No alembic.ini anywhere near: the configuration is built in code.
    monkeypatch.chdir(tmp_path)
    assert migrate.current_revision(empty_database_url) is None
    migrate.upgrade(empty_database_url)
    assert migrate.current_revision(empty_database_url) == migrate.head_revision()
    assert set(metadata.tables) <= tables(empty_database_url)
    migrate.upgrade(empty_database_url)  # again: nothing to do
    migrate.check_schema(empty_database_url)


def test_the_migrated_schema_matches_the_metadata(database_url: str) -> None:
    engine = migration_engine(database_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={
                    "compare_type": True,
                    "include_name": include_name,
                    "include_object": include_object_on(conn.dialect.name),
                },
            )
            assert compare_metadata(context, metadata) == []
    finally:
        engine.dispose()


# SQLite's surrogate ids are its rowids, keyed alone (migration 0014).
_SQLITE_ROWID_TABLES = frozenset(
    {"conversations", "memories", "events", "failed_runs", "documents"}
)


def test_every_per_user_key_names_the_user(backend: str, database_url: str) -> None:
    """What a store sharded by user requires (Citus): every primary key,
    unique constraint and foreign key of a table with ``user_id`` includes it,
    on both sides of a foreign key (read from the database's catalog)."""
    engine = migration_engine(database_url)
    lacking: list[str] = []
    try:
        with engine.connect() as conn:
            catalog = inspect(conn)
            for table in catalog.get_table_names():
                if "user_id" not in {c["name"] for c in catalog.get_columns(table)}:
                    continue
                key = catalog.get_pk_constraint(table)["constrained_columns"]
                if "user_id" not in key and not (
                    backend == "sqlite" and table in _SQLITE_ROWID_TABLES and key == ["id"]
                ):
                    lacking.append(f"{table} primary key {key}")
                for unique in catalog.get_unique_constraints(table):
                    if "user_id" not in unique["column_names"]:
                        lacking.append(f"{table} unique {unique['column_names']}")
                for fk in catalog.get_foreign_keys(table):
                    if (
                        "user_id" not in fk["constrained_columns"]
                        or "user_id" not in (fk["referred_columns"])
                    ):
                        lacking.append(
                            f"{table} foreign key {fk['constrained_columns']} -> "
                            f"{fk['referred_table']}{fk['referred_columns']}"
                        )
    finally:
        engine.dispose()
    assert lacking == []


def test_an_unmigrated_database_is_refused_with_the_command_that_fixes_it(
    empty_database_url: str,
) -> None:
    url = make_url(empty_database_url)
    if url.get_backend_name() == "postgresql":
        # The test server trusts every connection: the password is only there
        # to show that the message never prints it.
        url = url.set(password="s3cret")
    shown = url.render_as_string(hide_password=False)
    with pytest.raises(migrate.SchemaOutdated) as caught:
        migrate.check_schema(shown)
    message = caught.value.message
    assert "mnemo migrate --database-url " in message
    assert migrate.head_revision() in message
    assert "s3cret" not in message
    assert url.render_as_string(hide_password=True) in message


def test_a_database_from_a_newer_server_is_refused(database_url: str) -> None:
    engine = migration_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_future'")
    finally:
        engine.dispose()
    with pytest.raises(migrate.SchemaOutdated) as caught:
        migrate.check_schema(database_url)
    assert "newer" in caught.value.message


async def test_data_survives_an_upgrade(database_url: str) -> None:
    db = open_database(database_url)
    try:
        store = SqlStore(db)
        state = await save_state(store, ConversationKey("alice", ""), "brief", [exchange(1)])
        appended = await append_messages(
            store, "alice", "c1", messages("a", "b"), run_id="r", create_metadata={"k": "v"}
        )
    finally:
        await db.close()

    migrate.upgrade(database_url)

    db = open_database(database_url)
    try:
        store = SqlStore(db)
        assert await store.conversations.get_state(ConversationKey("alice", "")) == state
        assert await store.conversations.get_conversation("alice", "c1") == appended.conversation
        page = await store.conversations.list_messages("alice", "c1", start_position=0, limit=10)
        assert page.items == appended.messages
    finally:
        await db.close()


def _execute(url: str, *statements: str) -> None:
    engine = migration_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def test_an_empty_database_or_file_is_migrated_at_start(
    backend: str, empty_database_url: str
) -> None:
    if backend == "sqlite":  # an existing file of 0 bytes is an empty database too
        Path(make_url(empty_database_url).database or "").touch()
    found = migrate.prepare(empty_database_url, upgrade_schema=True)
    assert found.tables == () and found.revisions == ()
    assert migrate.current_revision(empty_database_url) == migrate.head_revision()


def test_another_applications_database_is_refused_unless_migrated_explicitly(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = empty_database_url
    _execute(url, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    _execute(url, "INSERT INTO notes (id, body) VALUES (1, 'not Mnemo data')")
    for upgrade_schema in (True, False):  # serve with and without --migrate-on-start
        with pytest.raises(migrate.NotMnemoDatabase) as caught:
            migrate.prepare(url, upgrade_schema=upgrade_schema)
        assert "is not a Mnemo database: it holds 1 tables (notes)" in caught.value.message
        assert "mnemo migrate --database-url" in caught.value.message
    with pytest.raises(migrate.NotMnemoDatabase):
        migrate.check_schema(url)
    assert tables(url) == {"notes"}

    # The operator's explicit `mnemo migrate` adds Mnemo's tables beside them.
    assert cli.main(["migrate", "--database-url", url], env={}) == 0
    assert "added Mnemo's tables to " in capsys.readouterr().out
    assert set(metadata.tables) | {"notes"} <= tables(url)
    migrate.check_schema(url)
    assert migrate.prepare(url, upgrade_schema=True).revisions == (migrate.head_revision(),)


def test_a_database_from_a_newer_server_is_not_migrated(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _execute(database_url, "UPDATE alembic_version SET version_num = '9999_future'")
    with pytest.raises(migrate.SchemaOutdated) as caught:
        migrate.prepare(database_url, upgrade_schema=True)
    assert "revision 9999_future, which this server does not know" in caught.value.message
    assert cli.main(["migrate", "--database-url", database_url], env={}) == 2
    assert "9999_future" in capsys.readouterr().err
    assert migrate.current_revision(database_url) == "9999_future"
