"""Building the "inject" context: the top entries under a byte budget, as one
ready-to-use system message (gecx-chat's ``inject`` read mode).

Selection, from recall hits in rank order (``domain.ranking.rank``):

- each entry's *rendered text* is its text with every run of whitespace
  (newlines included) collapsed to one space and the ends trimmed, so that an
  entry is always exactly one line of the message;
- an entry is taken when its rendered text fits in what is left of the
  budget; one that does not fit is skipped, and later, smaller entries may
  still be taken (entries are never cut, so a fact is never half-stated);
- an entry whose rendered text equals one already taken is skipped (it
  would spend budget on nothing new);
- selection stops after ``max_entries`` entries;
- with ``pinned_first`` (gecx-chat's ``hybrid`` mode), pinned hits are
  considered first, each group in rank order.

``used_bytes`` is the sum of the UTF-8 byte lengths of the rendered texts of
the entries taken: the header, the ``"- "`` bullets and the newlines are not
counted. It is never above ``max_bytes``. The message is ``HEADER``, then one
``"- <rendered text>"`` line per entry, joined by ``"\\n"``, with no trailing
newline; ``""`` when no entry was taken. The same hits give the same message.

Callers should ask recall for more hits than ``max_entries`` (for example
``min(4 * max_entries, 100)``), so that skipped entries can be replaced.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_server.domain.memory_models import InjectContext, RecallHit

DEFAULT_MAX_ENTRIES = 5
MAX_MAX_ENTRIES = 50
DEFAULT_MAX_BYTES = 1536
MAX_MAX_BYTES = 16384

HEADER = "Saved memories about the user (use them when relevant):"


def rendered_text(text: str) -> str:
    """``text`` as one line: whitespace runs collapsed to one space, trimmed."""
    return " ".join(text.split())


def build_context(
    hits: Sequence[RecallHit],
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    pinned_first: bool = False,
) -> InjectContext:
    """Select and render the context (see the module doc).

    Raises ``ValueError`` when ``max_entries < 1`` or ``max_bytes < 0``
    (the API layer validates requests; this guards programming errors).
    """
    if max_entries < 1:
        raise ValueError(f"max_entries must be at least 1 (got {max_entries})")
    if max_bytes < 0:
        raise ValueError(f"max_bytes must not be negative (got {max_bytes})")
    ordered = list(hits)
    if pinned_first:
        ordered.sort(key=lambda hit: not hit.memory.pinned)  # stable: rank order kept
    lines: list[str] = []
    ids: list[str] = []
    seen: set[str] = set()
    used = 0
    for hit in ordered:
        if len(ids) == max_entries:
            break
        line = rendered_text(hit.memory.text)
        size = len(line.encode("utf-8"))
        if not line or line in seen or hit.memory.memory_id in ids or used + size > max_bytes:
            continue
        seen.add(line)
        ids.append(hit.memory.memory_id)
        lines.append(f"- {line}")
        used += size
    if not lines:
        return InjectContext(system_message="", memory_ids=(), used_bytes=0)
    return InjectContext(
        system_message="\n".join([HEADER, *lines]), memory_ids=tuple(ids), used_bytes=used
    )
