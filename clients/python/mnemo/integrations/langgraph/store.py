"""``MnemoStore``: LangGraph's long-term memory store over Mnemo.

A drop-in for ``InMemoryStore``, ``SqliteStore`` or ``PostgresStore``::

    from mnemo.integrations.langgraph import MnemoStore

    store = MnemoStore("127.0.0.1:50051", user="u1")
    graph = builder.compile(store=store)

Items are Mnemo documents (``DocumentService``) of one Mnemo user, so a
phone, a laptop and cloud workers acting for that user share them, under
Mnemo's governance (consent, the memory switch, erasure, export, the change
feed). ``batch`` runs on the blocking ``MnemoClient``, ``abatch`` on an
``AsyncMnemoClient`` of the running event loop; both carry out the
operations in order, one call each.

Search: with an ``index`` config (``{"dims", "embed", "fields"}`` as for
LangGraph's stores) the texts at the configured paths (or the put's
``index`` paths) are embedded here, by the configured embeddings, and the
server ranks a query by cosine similarity of its embedding to them (the
best text of each item). Without one, a query is ranked by Mnemo's lexical
ranking of the whole value's text (or of the put's ``index`` paths);
``index=False`` leaves an item out of the ranking (it comes last, unscored).

TTL (``supports_ttl``): ``ttl`` minutes per put, or the ``ttl`` config's
``default_ttl``; reads refresh it as LangGraph asks (``refresh_ttl``);
expired items are gone for every read at once, and the server purges them.

Errors: the namespace rules are ``BaseStore``'s (``InvalidNamespaceError``,
before any call); a refused call raises the ``mnemo.client`` error
(``FailedPreconditionError`` while the user's consent is withdrawn or memory
is switched off).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from mnemo.client import AsyncMnemoClient, MnemoClient, NotFoundError
from mnemo.client import _documents as documents
from mnemo.client._calls import UnaryCall
from mnemo.client._client_base import DEFAULT_TARGET
from mnemo.v1 import documents_pb2 as dc

__all__ = ["MnemoStore"]

_SECONDS_PER_MINUTE = 60.0
_MAX_PAGE = 1000


def _time(value: Any) -> datetime:
    micros: int = value.ToMicroseconds()
    return datetime.fromtimestamp(micros / 1_000_000, UTC)


def _item(document: dc.Document) -> Item:
    return Item(
        value=json.loads(document.value_json),
        key=document.key,
        namespace=tuple(document.namespace),
        created_at=_time(document.create_time),
        updated_at=_time(document.update_time),
    )


def _search_item(scored: dc.ScoredDocument) -> SearchItem:
    document = scored.document
    return SearchItem(
        namespace=tuple(document.namespace),
        key=document.key,
        value=json.loads(document.value_json),
        created_at=_time(document.create_time),
        updated_at=_time(document.update_time),
        score=scored.score if scored.HasField("score") else None,
    )


def _nothing(_: Any) -> None:
    return None


def _asks_for_nothing(op: Op) -> bool:
    """A search or namespace listing with no room for a result (``limit``
    0 or less): nothing, as LangGraph's ``InMemoryStore`` answers, never a
    call (the server reads 0 as "the default page")."""
    return isinstance(op, (SearchOp, ListNamespacesOp)) and op.limit <= 0


def _conditions(op: ListNamespacesOp) -> tuple[Sequence[str] | None, Sequence[str] | None]:
    prefix = suffix = None
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix" and prefix is None:
            prefix = tuple(condition.path)
        elif condition.match_type == "suffix" and suffix is None:
            suffix = tuple(condition.path)
        else:
            raise ValueError(f"MnemoStore takes one prefix and one suffix condition: {op!r}")
    return prefix, suffix


class MnemoStore(BaseStore):  # type: ignore[misc]  # (Any where mypy runs: pyproject.toml)
    """A LangGraph ``BaseStore`` over the Mnemo server at ``target``, for
    ``user`` (see the module doc).

    ``index``: LangGraph's ``IndexConfig`` (embeddings computed here).
    ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``;
    the sweep is the server's). ``client_options``: passed to
    ``MnemoClient`` and ``AsyncMnemoClient`` (``timeout``, ``credentials``,
    ``token``, ``metadata``, ...).
    """

    supports_ttl = True

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        user: str,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        **client_options: Any,
    ) -> None:
        self.target = target
        self.user = user
        self.ttl_config = ttl
        self.index_config: IndexConfig | None = dict(index) if index else None
        self.embeddings = (
            ensure_embeddings(self.index_config.get("embed")) if self.index_config else None
        )
        self._fields = [
            (path, tokenize_path(path) if path != "$" else path)
            for path in ((self.index_config or {}).get("fields") or ["$"])
        ]
        self._client_options = client_options
        self._client = MnemoClient(target, **client_options)
        self._async: tuple[asyncio.AbstractEventLoop, AsyncMnemoClient] | None = None

    def close(self) -> None:
        """Close the blocking client's channel (the asyncio one closes with its loop)."""
        self._client.close()

    def _async_client(self) -> AsyncMnemoClient:
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (loop, AsyncMnemoClient(self.target, **self._client_options))
        return self._async[1]

    # ---------------------------------------------------------- requests

    def _texts(self, op: PutOp) -> list[tuple[str, str]] | None:
        """The ``(path, text)`` pairs to index; ``None``: the whole value."""
        if op.index is False:
            return []
        if op.index is None and self.index_config is None:
            return None
        fields = (
            self._fields
            if op.index is None
            else [(path, tokenize_path(path) if path != "$" else path) for path in op.index]
        )
        texts: list[tuple[str, str]] = []
        for path, tokens in fields:
            found = get_text_at_path(op.value, tokens)
            if len(found) == 1:
                texts.append((path, found[0]))
            else:
                texts += [(f"{path}.{i}", text) for i, text in enumerate(found)]
        return texts

    def _put_args(self, op: PutOp, embedded: dict[str, Sequence[float]]) -> dict[str, Any]:
        texts = self._texts(op)
        index: list[Any] | None = None
        if texts is not None:
            index = [
                (path, text, embedded[text]) if text in embedded else (path, text)
                for path, text in texts
            ]
        ttl = None if op.ttl is None else op.ttl * _SECONDS_PER_MINUTE
        return {"index": index, "ttl": ttl}

    def _to_embed(self, ops: Sequence[Op]) -> list[str]:
        if self.embeddings is None:
            return []
        texts = {
            text
            for op in ops
            if isinstance(op, PutOp) and op.value is not None
            for _, text in (self._texts(op) or [])
        }
        return sorted(texts)

    def _search_args(self, op: SearchOp, query_vector: Sequence[float] | None) -> dict[str, Any]:
        return {
            "filter": op.filter,
            "query": op.query or "",
            "query_embedding": query_vector,
            "offset": op.offset,
            "limit": min(op.limit, _MAX_PAGE),
            "refresh_ttl": op.refresh_ttl,
        }

    # ------------------------------------------------------------ batch

    def _call_of(
        self, op: Op, embedded: dict[str, Sequence[float]], query_vector: Sequence[float] | None
    ) -> tuple[UnaryCall[Any, Any], Callable[[Any], Result]]:
        """The call that carries ``op`` out, and how its answer becomes the
        op's result."""
        user = self.user
        call: UnaryCall[Any, Any]
        if isinstance(op, GetOp):
            call = documents.get_document(user, op.namespace, op.key, refresh_ttl=op.refresh_ttl)
            return call, _item
        if isinstance(op, PutOp):
            if op.value is None:
                return documents.delete_document(user, op.namespace, op.key), _nothing
            args = self._put_args(op, embedded)
            return documents.put_document(user, op.namespace, op.key, op.value, **args), _nothing
        if isinstance(op, SearchOp):
            args = self._search_args(op, query_vector)
            call = documents.search_documents(user, op.namespace_prefix, **args)
            return call, lambda found: [_search_item(s) for s in found]
        if isinstance(op, ListNamespacesOp):
            prefix, suffix = _conditions(op)
            call = documents.list_document_namespaces(
                user,
                prefix=prefix,
                suffix=suffix,
                max_depth=op.max_depth,
                offset=op.offset,
                limit=min(op.limit, _MAX_PAGE),
            )
            return call, list
        raise ValueError(f"Unknown operation type: {type(op)}")

    def _query(self, op: Op) -> str | None:
        """The text to embed for ``op`` (a search with a query and an index config)."""
        if isinstance(op, SearchOp) and op.query and self.embeddings is not None:
            return str(op.query)
        return None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        to_embed = self._to_embed(ops)
        embedded: dict[str, Sequence[float]] = {}
        if to_embed and self.embeddings is not None:
            embedded = dict(zip(to_embed, self.embeddings.embed_documents(to_embed), strict=True))
        results: list[Result] = []
        for op in ops:
            if _asks_for_nothing(op):
                results.append([])
                continue
            query = self._query(op)
            vector = None
            if query is not None and self.embeddings is not None:
                vector = self.embeddings.embed_query(query)
            call, parse = self._call_of(op, embedded, vector)
            try:
                results.append(parse(self._client._call(call)))
            except NotFoundError:
                if not isinstance(op, GetOp):
                    raise
                results.append(None)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        client = self._async_client()
        to_embed = self._to_embed(ops)
        embedded: dict[str, Sequence[float]] = {}
        if to_embed and self.embeddings is not None:
            vectors = await self.embeddings.aembed_documents(to_embed)
            embedded = dict(zip(to_embed, vectors, strict=True))
        results: list[Result] = []
        for op in ops:
            if _asks_for_nothing(op):
                results.append([])
                continue
            query = self._query(op)
            vector = None
            if query is not None and self.embeddings is not None:
                vector = await self.embeddings.aembed_query(query)
            call, parse = self._call_of(op, embedded, vector)
            try:
                results.append(parse(await client._call(call)))
            except NotFoundError:
                if not isinstance(op, GetOp):
                    raise
                results.append(None)
        return results
