/**
 * gecx-chat's local memory adapter over a key-value store, and the cache of
 * the hybrid adapter:
 *
 *     const cache = createLocalMemoryAdapter({ storage: localStorage });
 *
 * Same rules as the server: append-only, a keyed save archives the unarchived
 * entries of the same (scope, key[, conversation]) unless one of them states a
 * later fact (event time: the save is then an earlier version); lists show the newest
 * unarchived entries first; recall is a plain word match (no embeddings on a
 * device), conversation entries and pinned ones ranking higher.
 */

import { Code } from "@connectrpc/connect";
import { MnemoError } from "../../errors.js";
import { randomId } from "../ids.js";
import { withoutUndefined } from "./convert.js";
import { parseDocument, type CacheDocument } from "./cache-document.js";
import type { KeyValueStorage } from "./storage.js";
import type {
  ListMemoryOptions,
  MemoryAdapter,
  MemoryEntry,
  RecallMemoryQuery,
  RecalledMemory,
  SaveMemoryInput,
  UpdateMemoryInput,
} from "./types.js";

export interface LocalMemoryAdapterOptions {
  storage: KeyValueStorage;
  /** The storage key of the cache document. Default "mnemo.memories". */
  key?: string;
}

/** gecx-chat's `createLocalMemoryAdapter({ storage })`. */
export function createLocalMemoryAdapter(options: LocalMemoryAdapterOptions): LocalMemoryAdapter {
  return new LocalMemoryAdapter(options);
}

export class LocalMemoryAdapter implements MemoryAdapter {
  private readonly storage: KeyValueStorage;
  private readonly key: string;
  /** Serialises read-modify-write cycles of the document. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: LocalMemoryAdapterOptions) {
    this.storage = options.storage;
    this.key = options.key ?? "mnemo.memories";
  }

  /**
   * Runs `change` on the stored document and stores the result, one call at a
   * time. Rejects with whatever the storage or `change` threw (nothing is
   * stored then).
   */
  transact<T>(change: (document: CacheDocument) => T): Promise<T> {
    const run = this.queue.then(async () => {
      const document = parseDocument(await this.storage.getItem(this.key));
      const result = change(document);
      await this.storage.setItem(this.key, JSON.stringify(document));
      return result;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The stored document, read-only. */
  read(): Promise<CacheDocument> {
    const run = this.queue.then(async () => parseDocument(await this.storage.getItem(this.key)));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async save(input: SaveMemoryInput): Promise<MemoryEntry> {
    return (await this.saveLocally(input)).entry;
  }

  /**
   * `save`, also telling which entries it archived (so the hybrid adapter can undo it). As the
   * server does: the entry's event time is `input.eventTime`, else now; a keyed save archives the
   * live entries of its (scope, key) (their `validUntil` is its event time), unless an entry of
   * the key states a later fact: then the save is kept as an earlier version (archived, valid
   * until the next later event time) and archives nothing.
   */
  saveLocally(input: SaveMemoryInput): Promise<{ entry: MemoryEntry; archived: string[] }> {
    return this.transact((document) => {
      const now = Date.now();
      let entry = newEntry(input, now);
      const archived: string[] = [];
      if (entry.key !== undefined) {
        const said = entry.eventTime ?? now;
        const sameKey = document.entries.filter((other) => sameSlot(other, entry));
        const later = sameKey.flatMap((other) =>
          other.eventTime !== undefined && other.eventTime > said ? [other.eventTime] : [],
        );
        if (later.length > 0) {
          entry = { ...entry, archivedAt: now, validUntil: Math.min(...later) };
        } else {
          for (const other of sameKey) {
            if (other.archivedAt === undefined) {
              other.archivedAt = now;
              other.validUntil = said;
              archived.push(other.id);
            }
          }
        }
      }
      document.entries.push(entry);
      return { entry, archived };
    });
  }

  /** Rejects with MnemoError NOT_FOUND for an id the cache does not hold. */
  update(id: string, patch: UpdateMemoryInput): Promise<MemoryEntry> {
    return this.transact((document) => {
      const entry = document.entries.find((e) => e.id === id);
      if (entry === undefined) throw notFound(id);
      if (patch.text !== undefined) entry.text = patch.text;
      if (patch.metadata !== undefined) entry.metadata = { ...patch.metadata };
      if (patch.pinned !== undefined) entry.pinned = patch.pinned;
      entry.updatedAt = Date.now();
      return { ...entry };
    });
  }

  /** Deleting an id the cache does not hold is a no-op. */
  async delete(id: string): Promise<void> {
    await this.transact((document) => {
      document.entries = document.entries.filter((e) => e.id !== id);
    });
  }

  async get(id: string): Promise<MemoryEntry | undefined> {
    return (await this.read()).entries.find((e) => e.id === id);
  }

  async list(options: ListMemoryOptions = {}): Promise<MemoryEntry[]> {
    return listEntries((await this.read()).entries, options);
  }

  async recall(query: RecallMemoryQuery): Promise<RecalledMemory[]> {
    return recallEntries((await this.read()).entries, query);
  }
}

/** The entries `options` selects, newest first. */
export function listEntries(entries: readonly MemoryEntry[], options: ListMemoryOptions): MemoryEntry[] {
  const selected = entries
    .filter((e) => options.includeArchived === true || e.archivedAt === undefined)
    .filter((e) => options.scope === undefined || e.scope === options.scope)
    .filter((e) => options.conversationId === undefined || e.conversationId === options.conversationId)
    .filter((e) => options.key === undefined || e.key === options.key)
    .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
  return selected.slice(0, options.limit ?? selected.length).map((e) => ({ ...e }));
}

/** Word-match recall over unarchived entries, best first. */
export function recallEntries(entries: readonly MemoryEntry[], query: RecallMemoryQuery): RecalledMemory[] {
  const words = wordsOf(query.query);
  if (words.size === 0) return [];
  const scope = query.scope ?? "all";
  const results: Omit<RecalledMemory, "rank">[] = [];
  for (const entry of entries) {
    if (entry.archivedAt !== undefined) continue;
    if (entry.scope === "conversation") {
      if (scope === "identity" || entry.conversationId !== query.conversationId) continue;
    } else if (scope === "conversation") {
      continue;
    }
    const entryWords = wordsOf(entry.text);
    const matched = [...words].filter((w) => entryWords.has(w)).length;
    if (matched === 0) continue;
    const signals: RecalledMemory["signals"] = ["lexical"];
    let score = matched / words.size;
    if (entry.scope === "conversation") {
      signals.push("conversation");
      score += 0.5;
    }
    if (entry.pinned) {
      signals.push("pinned");
      score += 0.1;
    }
    if (query.minScore !== undefined && score < query.minScore) continue;
    results.push({ entry: { ...entry }, score, signals });
  }
  results.sort((a, b) => b.score - a.score || b.entry.createdAt - a.entry.createdAt);
  return results.slice(0, query.maxResults ?? 10).map((r, index) => ({ ...r, rank: index + 1 }));
}

function wordsOf(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? []);
}

function newEntry(input: SaveMemoryInput, now: number): MemoryEntry {
  const scope = input.scope ?? "identity";
  return withoutUndefined({
    id: input.id ?? randomId(),
    text: input.text,
    key: input.key || undefined,
    scope,
    conversationId: scope === "conversation" ? input.conversationId : undefined,
    source: input.source ?? "tool",
    metadata: { ...(input.metadata ?? {}) },
    pinned: input.pinned ?? false,
    createdAt: now,
    updatedAt: now,
    eventTime: input.eventTime ?? now,
  });
}

function sameSlot(a: MemoryEntry, b: MemoryEntry): boolean {
  return a.key === b.key && a.scope === b.scope && a.conversationId === b.conversationId;
}

function notFound(id: string): MnemoError {
  return new MnemoError({
    code: Code.NotFound,
    rawMessage: `no memory ${id} in the local cache`,
    reason: "NOT_FOUND",
  });
}
