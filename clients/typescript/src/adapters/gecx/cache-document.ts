/**
 * What a local memory cache stores: one JSON document under one key, so that
 * every change to it (entries, feed cursor, queued writes) is a single
 * `setItem`, atomic on every platform's key-value store.
 */

import type { DeleteMemoryOptions, MemoryEntry, SaveMemoryInput, UpdateMemoryInput } from "./types.js";

/**
 * A write kept while the server was unreachable (`onRemoteFailure: 'keep'`), replayed in order.
 * A save also keeps whether its event time is only the device's clock (`deviceTime`: sent
 * without one if the server refuses it) and which cached entries it archived, when
 * (`archived`, `archivedAt`: put back if the server archives nothing).
 */
export type PendingWrite =
  | {
      kind: "save";
      id: string;
      input: SaveMemoryInput;
      requestId: string;
      deviceTime?: boolean;
      archived?: string[];
      archivedAt?: number;
    }
  | { kind: "update"; id: string; patch: UpdateMemoryInput }
  | { kind: "delete"; id: string; options?: DeleteMemoryOptions };

export interface CacheDocument {
  version: 1;
  entries: MemoryEntry[];
  /** The change-feed cursor the entries reflect (a decimal int64). */
  cursor: string;
  /** Per entry id, the feed cursor of the newest server state applied (a decimal int64). */
  serverCursors: Record<string, string>;
  pending: PendingWrite[];
}

export function emptyDocument(): CacheDocument {
  return { version: 1, entries: [], cursor: "0", serverCursors: {}, pending: [] };
}

/** The document `text` holds; an empty one for anything unreadable (corrupt data reads as empty). */
export function parseDocument(text: string | null): CacheDocument {
  if (text === null) return emptyDocument();
  try {
    const value = JSON.parse(text) as Partial<CacheDocument>;
    if (value.version !== 1 || !Array.isArray(value.entries)) return emptyDocument();
    return {
      version: 1,
      entries: value.entries,
      cursor: typeof value.cursor === "string" && /^\d+$/.test(value.cursor) ? value.cursor : "0",
      serverCursors: value.serverCursors ?? {},
      pending: Array.isArray(value.pending) ? value.pending : [],
    };
  } catch {
    return emptyDocument();
  }
}
