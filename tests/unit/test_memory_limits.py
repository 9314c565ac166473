"""The documented size limits of memories and the draft validator."""

from __future__ import annotations

import math

import pytest

from mnemo_server.api.memories.rules import (
    check_memory_draft,
    embedding_violations,
    memory_draft_violations,
)
from mnemo_server.domain.errors import InvalidArgument
from mnemo_server.domain.limits import (
    MAX_EMBEDDING_DIMENSIONS,
    MAX_KEY_BYTES,
    MAX_METADATA_BYTES,
    MAX_METADATA_ENTRIES,
    MAX_TEXT_BYTES,
)
from mnemo_server.domain.memory_models import Embedding, MemoryDraft, MemoryScope


def fields_of(draft: MemoryDraft, prefix: str = "memory") -> list[str]:
    return [v.field for v in memory_draft_violations(draft, prefix=prefix)]


def raised(draft: MemoryDraft) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as info:
        check_memory_draft(draft)
    return info.value


def test_documented_limits() -> None:
    assert (MAX_TEXT_BYTES, MAX_KEY_BYTES) == (4096, 256)
    assert (MAX_METADATA_ENTRIES, MAX_METADATA_BYTES) == (32, 4096)
    assert MAX_EMBEDDING_DIMENSIONS == 4096


def test_a_draft_at_every_limit_is_valid() -> None:
    metadata = {f"k{i:02d}": "v" * 100 for i in range(MAX_METADATA_ENTRIES)}
    assert sum(len(k) + len(v) for k, v in metadata.items()) <= MAX_METADATA_BYTES
    draft = MemoryDraft(
        text="é" * (MAX_TEXT_BYTES // 2),
        key="k" * MAX_KEY_BYTES,
        scope=MemoryScope.CONVERSATION,
        conversation_id="c1",
        metadata=metadata,
        embedding=Embedding("m", tuple([0.5] * MAX_EMBEDDING_DIMENSIONS)),
    )
    assert memory_draft_violations(draft) == []
    check_memory_draft(draft)


def test_text_limit_counts_utf8_bytes_not_characters() -> None:
    # 2049 two-byte characters: 4098 bytes, only 2049 characters.
    error = raised(MemoryDraft(text="é" * (MAX_TEXT_BYTES // 2 + 1)))
    assert error.reason == "FIELD_TOO_LARGE"
    assert error.metadata == {"field": "memory.text", "limit": "4096"}
    assert [v.field for v in error.violations] == ["memory.text"]
    assert "4098" in error.violations[0].description


def test_only_size_violations_are_field_too_large_and_all_are_listed() -> None:
    draft = MemoryDraft(
        text="x" * (MAX_TEXT_BYTES + 1),
        key="k" * (MAX_KEY_BYTES + 1),
        metadata={f"k{i}": "v" for i in range(MAX_METADATA_ENTRIES + 1)},
        embedding=Embedding("m", (1.0,) * (MAX_EMBEDDING_DIMENSIONS + 1)),
    )
    error = raised(draft)
    assert error.reason == "FIELD_TOO_LARGE"
    assert [v.field for v in error.violations] == [
        "memory.text",
        "memory.key",
        "memory.metadata",
        "memory.embedding.values",
    ]
    assert error.metadata["field"] == "memory.text"


def test_metadata_total_bytes_count_keys_and_values() -> None:
    metadata = {"a": "v" * (MAX_METADATA_BYTES - 1)}
    assert fields_of(MemoryDraft(text="t", metadata=metadata)) == []
    metadata = {"ab": "v" * (MAX_METADATA_BYTES - 1)}
    error = raised(MemoryDraft(text="t", metadata=metadata))
    assert error.reason == "FIELD_TOO_LARGE"
    assert error.metadata == {"field": "memory.metadata", "limit": str(MAX_METADATA_BYTES)}


def test_mixed_violations_are_invalid_field_with_every_path() -> None:
    draft = MemoryDraft(
        text="x" * (MAX_TEXT_BYTES + 1),
        key="bad\nkey",
        scope=MemoryScope.CONVERSATION,
        metadata={"": "v"},
        embedding=Embedding("", (math.nan,)),
    )
    error = raised(draft)
    assert error.reason == "INVALID_FIELD"
    fields = [v.field for v in error.violations]
    assert fields == [
        "memory.text",
        "memory.key",
        "memory.conversation",
        "memory.metadata",
        "memory.embedding.model",
        "memory.embedding.values",
    ]
    assert error.metadata["fields"] == ",".join(fields)


@pytest.mark.parametrize(
    ("draft", "field"),
    [
        (MemoryDraft(text=""), "memory.text"),
        (MemoryDraft(text=" \n\t"), "memory.text"),
        (MemoryDraft(text="nul\x00inside"), "memory.text"),
        (MemoryDraft(text="lone \udc80 surrogate"), "memory.text"),
        (MemoryDraft(text="t", key="tab\tkey"), "memory.key"),
        (MemoryDraft(text="t", key="nul\x00"), "memory.key"),
        (MemoryDraft(text="t", scope=MemoryScope.CONVERSATION), "memory.conversation"),
        (MemoryDraft(text="t", conversation_id="c1"), "memory.conversation"),
        (MemoryDraft(text="t", metadata={"k": "nul\x00"}), "memory.metadata['k']"),
        (MemoryDraft(text="t", metadata={"k\x01": "v"}), "memory.metadata['k\\x01']"),
        (MemoryDraft(text="t", embedding=Embedding("m", ())), "memory.embedding.values"),
        (MemoryDraft(text="t", embedding=Embedding("m", (0.0, 0.0))), "memory.embedding.values"),
        (
            MemoryDraft(text="t", embedding=Embedding("m", (1.0, math.inf))),
            "memory.embedding.values",
        ),
        (MemoryDraft(text="t", embedding=Embedding(" ", (1.0,))), "memory.embedding.model"),
    ],
)
def test_invalid_fields(draft: MemoryDraft, field: str) -> None:
    assert fields_of(draft) == [field]
    error = raised(draft)
    assert error.reason == "INVALID_FIELD"
    assert error.violations[0].field == field


def test_text_may_hold_newlines_and_tabs() -> None:
    assert fields_of(MemoryDraft(text="line one\n\tline two")) == []


def test_prefix_names_the_field_path() -> None:
    draft = MemoryDraft(text="")
    assert fields_of(draft, prefix="candidates[3].memory") == ["candidates[3].memory.text"]


def test_embedding_violations_alone() -> None:
    assert embedding_violations(Embedding("m", (1.0, 2.0)), "query_embedding") == []
    assert [v.field for v in embedding_violations(Embedding("", ()), "query_embedding")] == [
        "query_embedding.model",
        "query_embedding.values",
    ]
