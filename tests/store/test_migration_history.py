"""Every earlier revision, populated, upgraded to head; then one step down
and up again; on every backend.

The data: two users with data of every kind, written through a real server
at head (``tests.api.user_data.populate``, with the hashing embedder), read
back row by row. For each revision R before head, a new database is migrated
to R and given those rows of the tables R has (in R's columns; below 0006
with revision 0005's search documents, full-text rows and
``mnemo-hashing-v1`` vectors, as a server of that time wrote them), then
upgraded to head. Every table then holds the rows it held at R (and
``memory_terms`` the counts the store keeps), and every user's export is the
head database's, less the sections whose tables R did not have. Downgrading
one step and upgrading again changes neither; at R = head - 1 the downgrade
gives back exactly the rows that were loaded at R.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, MetaData, Table, func, inspect, select, text

from mnemo_server.domain.user_data import EXPORT_SECTIONS, ExportItem, ExportSection
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.store import migrate
from mnemo_server.store.engine.engines import migration_engine
from mnemo_server.store.schema import metadata
from mnemo_server.store.transactions.database import open_database
from mnemo_server.store.user_data.store import SqlUserData
from tests.api.user_data import populate
from tests.support.databases import PostgresDatabases
from tests.support.embedding import wait_until_embedded
from tests.support.server import running_server
from tests.support.user_rows import connected, user_digest

USERS = ("u1", "u2")
SECTION_TABLES = {
    ExportSection.CONSENT: "user_settings",
    ExportSection.MEMORY_SETTINGS: "user_settings",
    ExportSection.CONVERSATIONS: "conversations",
    ExportSection.MEMORY_STATES: "working_memory",
    ExportSection.MESSAGES: "messages",
    ExportSection.COMPACTION_CHECKPOINTS: "compaction_checkpoints",
    ExportSection.FAILED_RUNS: "failed_runs",
    ExportSection.MEMORIES: "memories",
    ExportSection.MEMORY_VERSIONS: "memory_versions",
    ExportSection.TOMBSTONES: "memory_tombstones",
    ExportSection.CANDIDATES: "memory_candidates",
    ExportSection.EVENTS: "events",
    ExportSection.DOCUMENTS: "documents",
    ExportSection.GRAPH_CHECKPOINTS: "graph_checkpoints",
}
Rows = dict[str, list[dict[str, Any]]]
Export = dict[str, dict[ExportSection, list[ExportItem]]]


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(migrate.alembic_config())


def _earlier_revisions() -> list[str]:
    oldest_first = [rev.revision for rev in reversed(list(_script().walk_revisions()))]
    return oldest_first[:-1]


def _revision_0006() -> ModuleType:
    module: ModuleType = _script().get_revision("0006").module
    return module


def _rows(url: str) -> Rows:
    with connected(url) as conn:
        return {
            table.name: [dict(row._mapping) for row in conn.execute(select(table))]
            for table in metadata.sorted_tables
        }


def _counts(url: str) -> dict[str, int]:
    with connected(url) as conn:
        return {
            table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in metadata.sorted_tables
        }


async def _exports(url: str) -> Export:
    db = open_database(url)
    try:
        store = SqlUserData(db)
        return {
            user: {
                section: list(
                    (await store.export_page(user, section, limit=10_000, after=None)).items
                )
                for section in EXPORT_SECTIONS
            }
            for user in USERS
        }
    finally:
        await db.close()


def _load_at(conn: Connection, rows: Rows, old_text: bool) -> set[str]:
    """``rows`` of the tables the database has, in its columns; the names of
    those tables. ``old_text``: as revision 0005 wrote them (its documents,
    its full-text rows, hashing-v1 vectors)."""
    present = set(inspect(conn).get_table_names()) & set(metadata.tables)
    revision_0006 = _revision_0006()
    texts = {row["id"]: str(row["text"]) for row in rows["memories"]}
    for table in metadata.sorted_tables:
        if table.name not in present:
            continue
        reflected = Table(table.name, MetaData(), autoload_with=conn)
        loaded = [{c: row[c] for c in reflected.c.keys()} for row in rows[table.name]]
        if old_text:
            _as_0005(table.name, loaded, texts, revision_0006)
        if loaded:
            conn.execute(reflected.insert(), loaded)
    if old_text and "memories" in present and conn.dialect.name == "sqlite":
        live = [
            {"i": row["id"], "d": revision_0006._legacy_document(row["text"])}
            for row in rows["memories"]
            if row["archived_at"] is None
        ]
        conn.execute(text("INSERT INTO memories_fts(rowid, search_document) VALUES (:i, :d)"), live)
    return present


def _as_0005(
    table: str, loaded: list[dict[str, Any]], texts: dict[int, str], revision_0006: ModuleType
) -> None:
    """Rows of ``table`` as a revision-0005 server wrote them. ``texts``: the
    entries' texts by ``memories.id``."""
    if table == "memories":
        for row in loaded:
            row["search_document"] = revision_0006._legacy_document(row["text"])
    for row, model_key, vector_key in _vectors(table, loaded):
        if str(row[model_key]).startswith("mnemo-hashing-v2-"):
            body = texts[row["memory_pk"]] if table == "memory_embeddings" else row["text"]
            model, vector = revision_0006._v1(row[model_key], body)
            assert len(vector) == len(decode_vector(row[vector_key]))
            row[model_key], row[vector_key] = model, encode_vector(vector)


def _vectors(table: str, loaded: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str, str]]:
    if table == "memory_embeddings":
        yield from ((row, "model", "vector") for row in loaded)
    elif table == "memory_candidates":
        yield from ((row, "embedding_model", "embedding") for row in loaded if row["embedding"])


def _expected(source: Export, present: set[str]) -> Export:
    return {
        user: {
            section: items if SECTION_TABLES[section] in present else []
            for section, items in sections.items()
        }
        for user, sections in source.items()
    }


def _digests(url: str, present: set[str]) -> dict[str, dict[str, tuple[int, str]]]:
    """Every user's rows in the ``present`` tables, but for the vector
    versions (each migration that recomputes vectors moves them on)."""
    tables = present - {"memory_user_state"}
    return {user: user_digest(url, user, tables) for user in USERS}


def _new_database(backend: str, request: pytest.FixtureRequest, directory: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{directory / 'revision.db'}"
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    return databases.empty()


def _drop(backend: str, request: pytest.FixtureRequest, url: str) -> None:
    if backend == "postgres":
        databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
        databases.drop(url)


@pytest.mark.timeout(300)
async def test_every_earlier_revision_upgrades_and_one_step_down_and_up_changes_nothing(
    backend: str, database_url: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with (
        running_server(database_url, embedder="hashing:8") as target,
        grpc.insecure_channel(target) as channel,
    ):
        for user in USERS:
            populate(channel, user, f"mark of {user}")
        wait_until_embedded(database_url)
    source_rows, source_counts = _rows(database_url), _counts(database_url)
    source = await _exports(database_url)
    assert any(
        str(row["model"]).startswith("mnemo-hashing-v2-")
        for row in source_rows["memory_embeddings"]
    )
    head = migrate.head_revision()
    below_head = _earlier_revisions()[-1]

    for revision in _earlier_revisions():
        directory = tmp_path / revision
        directory.mkdir()
        url = _new_database(backend, request, directory)
        try:
            migrate.upgrade(url, revision)
            engine = migration_engine(url)
            try:
                with engine.begin() as conn:
                    present = _load_at(conn, source_rows, old_text=revision < "0006")
            finally:
                engine.dispose()
            loaded = _digests(url, present) if revision == below_head else None

            migrate.upgrade(url)
            assert migrate.current_revision(url) == head
            counts = _counts(url)
            for table, n in counts.items():
                kept = table in present or (table == "memory_terms" and "memories" in present)
                assert n == (source_counts[table] if kept else 0), (revision, table)
            exported = await _exports(url)
            assert exported == _expected(source, present), revision

            migrate.downgrade(url, "-1")
            assert migrate.current_revision(url) == below_head
            if loaded is not None:
                assert _digests(url, present) == loaded  # 0005's documents and vectors, exactly
            migrate.upgrade(url)
            assert _counts(url) == counts, revision
            assert await _exports(url) == exported, revision
        finally:
            await asyncio.to_thread(_drop, backend, request, url)
