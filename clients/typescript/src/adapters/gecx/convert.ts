/** gecx-chat entries to and from Mnemo's `Memory`. */

import {
  MemoryScope as ScopeEnum,
  MemorySource as SourceEnum,
  RecallScope,
  RecallSignal,
  SaveOutcome as OutcomeEnum,
  type Memory,
} from "../../gen/mnemo/v1/memories_pb.js";
import { conversationName, fromMnemoId, lastSegment } from "../ids.js";
import { fromMs, toMs } from "../time.js";
import type {
  MemoryEntry,
  MemoryScope,
  MemorySource,
  RecallMemoryQuery,
  RecalledMemory,
  SaveMemoryInput,
  SaveOutcome,
} from "./types.js";

const SOURCES: Record<MemorySource, SourceEnum> = {
  tool: SourceEnum.TOOL_CALL,
  extractor: SourceEnum.EXTRACTOR,
  user: SourceEnum.USER,
  import: SourceEnum.IMPORT,
};

const SIGNALS: Partial<Record<RecallSignal, RecalledMemory["signals"][number]>> = {
  [RecallSignal.LEXICAL]: "lexical",
  [RecallSignal.SEMANTIC]: "semantic",
  [RecallSignal.CONVERSATION_SCOPE]: "conversation",
  [RecallSignal.PINNED]: "pinned",
};

/** The entry a Mnemo memory is. */
export function toEntry(memory: Memory): MemoryEntry {
  const source = (Object.keys(SOURCES) as MemorySource[]).find((s) => SOURCES[s] === memory.source);
  return withoutUndefined({
    id: lastSegment(memory.name),
    text: memory.text,
    key: memory.key || undefined,
    scope: memory.scope === ScopeEnum.CONVERSATION ? "conversation" : "identity",
    conversationId: memory.conversation ? fromMnemoId(lastSegment(memory.conversation)) : undefined,
    source: source ?? "tool",
    metadata: { ...memory.metadata },
    pinned: memory.pinned,
    createdAt: toMs(memory.createTime),
    updatedAt: toMs(memory.updateTime),
    archivedAt: memory.archiveTime === undefined ? undefined : toMs(memory.archiveTime),
    eventTime: memory.eventTime === undefined ? undefined : toMs(memory.eventTime),
    validUntil: memory.validUntil === undefined ? undefined : toMs(memory.validUntil),
  });
}

/** What a CreateMemory did, as gecx-chat's adapters say it ("created" for a server that does not say). */
export function toOutcome(outcome: OutcomeEnum): SaveOutcome {
  switch (outcome) {
    case OutcomeEnum.HISTORICAL:
      return "historical";
    case OutcomeEnum.DUPLICATE:
      return "duplicate";
    default:
      return "created";
  }
}

/**
 * `entry` without its undefined optional members, so that an entry is the
 * same object whether it comes from the server or from a cache's JSON.
 */
export function withoutUndefined(entry: MemoryEntry): MemoryEntry {
  const copy: Record<string, unknown> = { ...entry };
  for (const key of Object.keys(copy)) {
    if (copy[key] === undefined) delete copy[key];
  }
  return copy as MemoryEntry;
}

/** The MemoryScope of a gecx-chat scope; unspecified (every scope) when there is none. */
export function toScopeEnum(scope: MemoryScope | undefined): ScopeEnum {
  if (scope === undefined) return ScopeEnum.UNSPECIFIED;
  return scope === "conversation" ? ScopeEnum.CONVERSATION : ScopeEnum.IDENTITY;
}

/** The `Memory` fields of a save. */
export function toMemoryInit(userId: string, input: SaveMemoryInput) {
  const scope: MemoryScope = input.scope ?? "identity";
  return {
    text: input.text,
    key: input.key ?? "",
    scope: toScopeEnum(scope),
    conversation:
      scope === "conversation" && input.conversationId !== undefined
        ? conversationName(userId, input.conversationId)
        : "",
    source: SOURCES[input.source ?? "tool"],
    metadata: { ...(input.metadata ?? {}) },
    pinned: input.pinned ?? false,
    eventTime: input.eventTime === undefined ? undefined : fromMs(input.eventTime),
  };
}

/** The RecallMemories request fields of a recall query. */
export function toRecallInit(userId: string, query: RecallMemoryQuery) {
  const scope =
    query.scope === "identity"
      ? RecallScope.IDENTITY
      : query.scope === "conversation"
        ? RecallScope.CONVERSATION
        : RecallScope.UNSPECIFIED;
  return {
    query: query.query,
    conversation:
      query.conversationId === undefined ? "" : conversationName(userId, query.conversationId),
    scope,
    maxResults: query.maxResults ?? 0,
    minScore: query.minScore,
    // Unset: the server fuses vector similarity when it has an embedder.
    semantic: query.semantic,
  };
}

/** The recalled entry's signals, as gecx-chat names them. */
export function toSignals(signals: readonly RecallSignal[]): RecalledMemory["signals"] {
  return signals.flatMap((s) => {
    const name = SIGNALS[s];
    return name === undefined ? [] : [name];
  });
}
