/**
 * gecx-chat's hybrid memory adapter: a Mnemo server as the source of truth and
 * a local cache, with optimistic writes and server-wins reconciliation through
 * the change feed:
 *
 *     const remote = createMnemoServerMemoryAdapter(client, { userId: "u1" });
 *     const cache = createLocalMemoryAdapter({ storage });
 *     const adapter = createMnemoHybridMemoryAdapter({ remote, cache });
 *     adapter.start(); // follow the feed (other devices' changes arrive in the cache)
 *
 * Writes land in the cache first, then on the server; the server's answer
 * replaces the optimistic entry. A save carries its event time (`eventTime`,
 * else the device's clock when `save` was called), so a save sent late keeps
 * when it was said. When the server answers that the fact is already a live
 * entry ("duplicate"), the optimistic entry leaves the cache for the server's
 * (another id), also when a kept save is replayed (the kept writes queued
 * after it for the optimistic id then go to the server's entry); when it
 * stored nothing as current ("historical", "duplicate"), the entries the
 * optimistic save archived take the server's state again. When the server
 * write fails:
 * - `onRemoteFailure: 'rollback'` (the default): the cache is put back as it
 *   was and the write rejects with the MnemoError;
 * - `'keep'`: if the server could not be reached (UNAVAILABLE, a deadline),
 *   the optimistic write stays in the cache and is queued; `sync()` (run by the
 *   feed follower each time it reconnects) replays the queue in order, with
 *   the same ids, then catches up with the feed. A refusal by the server
 *   (consent withdrawn, invalid input...) is rolled back in both modes: it
 *   would be refused again.
 *
 * Reads never reject (a memory failure never blocks a send): `list` and
 * `recall` ask the server and fall back to the cache (`list` also refreshes
 * the cache with what the server listed, server wins); if the cache cannot be
 * read either, both answer nothing.
 */

import { Code } from "@connectrpc/connect";
import { sleep } from "../../interceptors.js";
import { MnemoError } from "../../errors.js";
import { hasCode, isTransient } from "../failures.js";
import { randomId } from "../ids.js";
import type { CacheDocument, PendingWrite } from "./cache-document.js";
import { applyOwnWrite, ChangeFeed, isResumable, putEntry, removeEntry, type FeedEvent } from "./feed.js";
import type { LocalMemoryAdapter } from "./local.js";
import type { MnemoServerMemoryAdapter, ServerSave } from "./server.js";
import type {
  DeleteMemoryOptions,
  ListMemoryOptions,
  MemoryAdapter,
  MemoryEntry,
  RecallMemoryQuery,
  RecalledMemory,
  SaveMemoryInput,
  UpdateMemoryInput,
} from "./types.js";

export type RemoteFailurePolicy = "rollback" | "keep";

export interface HybridMemoryAdapterOptions {
  remote: MnemoServerMemoryAdapter;
  cache: LocalMemoryAdapter;
  /** What an optimistic write becomes when the server write fails. Default "rollback". */
  onRemoteFailure?: RemoteFailurePolicy;
  /** Reconnection backoff of the feed follower, in ms: first and largest pause. */
  reconnect?: { initialMs?: number; maxMs?: number };
}

/** What the hybrid adapter reports to `onEvent` listeners. */
export type HybridEvent =
  | FeedEvent
  | { type: "rolled-back"; operation: PendingWrite["kind"]; id: string; error: unknown }
  | { type: "kept"; operation: PendingWrite["kind"]; id: string; error: unknown }
  | { type: "replayed"; write: PendingWrite }
  | { type: "dropped"; write: PendingWrite; error: unknown }
  | { type: "synced"; cursor: bigint }
  | { type: "read-degraded"; operation: "list" | "recall"; error: unknown };

/** gecx-chat's `createHybridMemoryAdapter({ remote, cache })`, backed by Mnemo. */
export function createMnemoHybridMemoryAdapter(options: HybridMemoryAdapterOptions): MnemoHybridMemoryAdapter {
  return new MnemoHybridMemoryAdapter(options);
}

export class MnemoHybridMemoryAdapter implements MemoryAdapter {
  private readonly remote: MnemoServerMemoryAdapter;
  private readonly cache: LocalMemoryAdapter;
  private readonly policy: RemoteFailurePolicy;
  private readonly feed: ChangeFeed;
  private readonly listeners = new Set<(event: HybridEvent) => void>();
  private follower: { abort: AbortController; done: Promise<void> } | undefined;
  private flushing: Promise<void> | undefined;

  constructor(private readonly options: HybridMemoryAdapterOptions) {
    this.remote = options.remote;
    this.cache = options.cache;
    this.policy = options.onRemoteFailure ?? "rollback";
    this.feed = new ChangeFeed(this.remote, this.cache, (event) => this.emit(event));
  }

  /** Subscribes to what the adapter does; returns the unsubscribe function. */
  onEvent(listener: (event: HybridEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Saves optimistically (see the module). Resolves with the server's entry:
   * for a fact already live, that entry (another id than the optimistic one,
   * which leaves the cache); with `'keep'` and the server unreachable, the
   * optimistic entry.
   */
  async save(input: SaveMemoryInput): Promise<MemoryEntry> {
    // The same request now and when replayed: a late send keeps when it was said.
    const deviceTime = input.eventTime === undefined;
    const withId = { ...input, id: input.id ?? randomId(), eventTime: input.eventTime ?? Date.now() };
    const requestId = randomId();
    const { entry, archived } = await this.cache.saveLocally(withId);
    try {
      const written = await this.create(withId, requestId, deviceTime);
      const chain = await this.chainOf(written, archived);
      await this.cache.transact((document) => applySaved(document, entry.id, written, archived, entry.createdAt, chain));
      return written.value;
    } catch (error) {
      const write: PendingWrite = {
        kind: "save",
        id: entry.id,
        input: withId,
        requestId,
        ...(deviceTime ? { deviceTime } : {}),
        ...(archived.length > 0 ? { archived, archivedAt: entry.createdAt } : {}),
      };
      if (await this.kept(write, error)) return entry;
      return this.rolledBack(write, error, (document) => {
        removeEntry(document, entry.id);
        for (const other of document.entries) {
          if (archived.includes(other.id)) {
            delete other.archivedAt;
            delete other.validUntil;
          }
        }
      });
    }
  }

  /**
   * The server's entries of a keyed save's (scope, key), when it stored
   * nothing as current ("historical", "duplicate") and the cache archived
   * entries other than the one it answered: whether the server keeps each
   * of them current is then its to say. [] when there is nothing to ask;
   * undefined if the list fails (the save stands: the cache is put back as
   * it was, and the feed or the next list brings the server's state).
   */
  private async chainOf(written: ServerSave, archived: readonly string[]): Promise<MemoryEntry[] | undefined> {
    const saved = written.value;
    if (written.outcome === "created" || !archived.some((id) => id !== saved.id)) return [];
    try {
      return await this.remote.fetchList({
        scope: saved.scope,
        conversationId: saved.conversationId,
        key: saved.key,
        includeArchived: true,
      });
    } catch {
      return undefined;
    }
  }

  /**
   * CreateMemory of a save. An event time the server refuses that was only
   * the device's clock (more than a day ahead of the server's) gives way to
   * the server's clock: sent again without it, under a new request id (a
   * refused request stored nothing).
   */
  private async create(input: SaveMemoryInput, requestId: string, deviceTime: boolean): Promise<ServerSave> {
    try {
      return await this.remote.create(input, requestId);
    } catch (error) {
      if (!deviceTime || input.eventTime === undefined || !refusesEventTime(error)) throw error;
      return this.remote.create({ ...input, eventTime: undefined }, randomId());
    }
  }

  async update(id: string, patch: UpdateMemoryInput): Promise<MemoryEntry> {
    const before = await this.cache.get(id);
    const optimistic = before === undefined ? undefined : await this.cache.update(id, patch);
    try {
      const written = await this.remote.patch(id, patch);
      await this.cache.transact((document) => applyOwnWrite(document, id, written.changeCursor, written.value));
      return written.value;
    } catch (error) {
      const write: PendingWrite = { kind: "update", id, patch };
      // An entry the cache did not hold has no optimistic version to keep.
      if (optimistic !== undefined && (await this.kept(write, error))) return optimistic;
      return this.rolledBack(write, error, (document) => {
        if (before !== undefined) putEntry(document, before);
      });
    }
  }

  async delete(id: string, options: DeleteMemoryOptions = {}): Promise<void> {
    const before = await this.cache.get(id);
    await this.cache.delete(id);
    try {
      const written = await this.remote.remove(id, options);
      await this.cache.transact((document) => applyOwnWrite(document, id, written.changeCursor, undefined));
    } catch (error) {
      const write: PendingWrite = { kind: "delete", id, options };
      if (await this.kept(write, error)) return;
      await this.rolledBack(write, error, (document) => {
        if (before !== undefined) putEntry(document, before);
      });
    }
  }

  /**
   * The server's entries (after replaying kept writes), which then replace
   * their cached versions (server wins; an entry with a kept write keeps its
   * optimistic version). When the server fails, the cached entries; a
   * governance refusal (FAILED_PRECONDITION: memory off, consent withdrawn)
   * reads as nothing, the cache included. Never rejects: [] if the cache
   * cannot be read either.
   */
  async list(options: ListMemoryOptions = {}): Promise<MemoryEntry[]> {
    try {
      await this.flush();
      const before = await this.cache.read();
      const entries = await this.remote.fetchList(options);
      await this.refresh(entries, before);
      return entries;
    } catch (error) {
      this.emit({ type: "read-degraded", operation: "list", error });
      if (hasCode(error, Code.FailedPrecondition)) return [];
    }
    try {
      return await this.cache.list(options);
    } catch {
      return [];
    }
  }

  /**
   * What the server just listed replaces the cached entries, except those with
   * kept writes, and those the feed or an own write changed while the list was
   * read (`before` is the cache then): their cached state may be the newer.
   */
  private async refresh(entries: readonly MemoryEntry[], before: CacheDocument): Promise<void> {
    try {
      await this.cache.transact((document) => {
        if (document.cursor !== before.cursor) return;
        const pending = new Set(document.pending.map((write) => write.id));
        for (const entry of entries) {
          const moved = document.serverCursors[entry.id] !== before.serverCursors[entry.id];
          if (!pending.has(entry.id) && !moved) putEntry(document, entry);
        }
      });
    } catch {
      // An unwritable cache does not spoil the server's answer.
    }
  }

  /**
   * The server's recall; the cache's word match when the server fails; a
   * governance refusal (FAILED_PRECONDITION) recalls nothing, the cache
   * included (as list); else nothing. Never rejects.
   */
  async recall(query: RecallMemoryQuery): Promise<RecalledMemory[]> {
    try {
      return await this.remote.fetchRecall(query);
    } catch (error) {
      this.emit({ type: "read-degraded", operation: "recall", error });
      if (hasCode(error, Code.FailedPrecondition)) return [];
    }
    try {
      return await this.cache.recall(query);
    } catch {
      return [];
    }
  }

  /** Writes kept while the server was unreachable, oldest first. */
  async pendingWrites(): Promise<PendingWrite[]> {
    return (await this.cache.read()).pending;
  }

  /**
   * Replays the kept writes, then applies the feed's changes since the cache's
   * cursor. Rejects with the MnemoError of an unreachable server (the writes
   * not replayed stay queued).
   */
  async sync(): Promise<void> {
    await this.flush();
    await this.feed.pull();
    this.emit({ type: "synced", cursor: BigInt((await this.cache.read()).cursor) });
  }

  /** Rebuilds the cache from a full list (what an expired cursor leads to). */
  resyncFromList(): Promise<void> {
    return this.feed.resyncFromList();
  }

  /**
   * Follows the change feed in the background until `stop()`: sync, then
   * WatchChanges; on any failure, waits (backing off up to `reconnect.maxMs`)
   * and starts again, so kept writes are replayed as soon as the server is
   * back. Idempotent.
   */
  start(): void {
    if (this.follower !== undefined) return;
    const abort = new AbortController();
    this.follower = { abort, done: this.follow(abort.signal) };
  }

  /** Stops following the feed; resolves when the follower has stopped. */
  async stop(): Promise<void> {
    const follower = this.follower;
    this.follower = undefined;
    if (follower === undefined) return;
    follower.abort.abort();
    await follower.done;
  }

  private async follow(signal: AbortSignal): Promise<void> {
    const initial = this.options.reconnect?.initialMs ?? 250;
    const max = this.options.reconnect?.maxMs ?? 5_000;
    let pause = initial;
    while (!signal.aborted) {
      try {
        await this.sync();
        pause = initial;
        await this.feed.follow(signal);
      } catch (error) {
        if (signal.aborted) break;
        if (isResumable(error)) continue;
        this.emit({ type: "error", error });
        await sleep(pause, signal);
        pause = Math.min(pause * 2, max);
      }
    }
  }

  /** Replays kept writes in order; one flush at a time. */
  private flush(): Promise<void> {
    this.flushing ??= this.replayPending().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async replayPending(): Promise<void> {
    for (;;) {
      const [write] = (await this.cache.read()).pending;
      if (write === undefined) return;
      try {
        await this.replay(write);
        this.emit({ type: "replayed", write });
      } catch (error) {
        if (isTransient(error)) throw error;
        // Refused now (e.g. updated an entry deleted elsewhere): the server wins.
        this.emit({ type: "dropped", write, error });
      }
      await this.cache.transact((document) => {
        const [first] = document.pending;
        if (first !== undefined && sameWrite(first, write)) document.pending.shift();
      });
    }
  }

  private async replay(write: PendingWrite): Promise<void> {
    switch (write.kind) {
      case "save": {
        const written = await this.create(write.input, write.requestId, write.deviceTime === true);
        const archived = write.archived ?? [];
        const chain = await this.chainOf(written, archived);
        await this.cache.transact((d) => {
          applySaved(d, write.id, written, archived, write.archivedAt ?? 0, chain);
          const saved = written.value.id;
          if (saved === write.id) return;
          // The fact was already live: the writes queued for the optimistic entry go to the server's.
          for (const later of d.pending) {
            if (later.id === write.id && !sameWrite(later, write)) later.id = saved;
          }
        });
        return;
      }
      case "update": {
        const written = await this.remote.patch(write.id, write.patch);
        await this.cache.transact((d) => applyOwnWrite(d, write.id, written.changeCursor, written.value));
        return;
      }
      case "delete": {
        const written = await this.remote.remove(write.id, write.options);
        await this.cache.transact((d) => applyOwnWrite(d, write.id, written.changeCursor, undefined));
        return;
      }
    }
  }

  /**
   * Queues a failed server write and keeps its optimistic version, if the
   * policy is "keep" and the server could not be reached; tells whether it did.
   */
  private async kept(write: PendingWrite, error: unknown): Promise<boolean> {
    if (this.policy !== "keep" || !isTransient(error)) return false;
    await this.cache.transact((document) => document.pending.push(write));
    this.emit({ type: "kept", operation: write.kind, id: write.id, error });
    return true;
  }

  /** Puts the cache back as it was before a failed write (`undo`), then rejects with `error`. */
  private async rolledBack(
    write: PendingWrite,
    error: unknown,
    undo: (document: CacheDocument) => void,
  ): Promise<never> {
    await this.cache.transact(undo);
    this.emit({ type: "rolled-back", operation: write.kind, id: write.id, error });
    throw error;
  }

  private emit(event: HybridEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

function sameWrite(a: PendingWrite, b: PendingWrite): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Records the server's answer to a save whose optimistic entry is `optimisticId`:
 * - "historical" or "duplicate": the server did not archive the entries the
 *   optimistic save archived (`archivedLocally`, at `archivedAt`); each one
 *   still as the save left it takes the server's state from `chain` (another
 *   entry of the key may have superseded it), else is put back as it was;
 * - an entry of another id (a duplicate): the optimistic entry leaves the cache;
 * - then the server's entry, and the archive of the entries it says it archived.
 */
function applySaved(
  document: CacheDocument,
  optimisticId: string,
  written: ServerSave,
  archivedLocally: readonly string[],
  archivedAt: number,
  chain: readonly MemoryEntry[] | undefined,
): void {
  if (written.outcome !== "created") {
    document.entries = document.entries.map((other) => {
      if (!archivedLocally.includes(other.id) || other.archivedAt !== archivedAt) return other;
      const listed = chain?.find((e) => e.id === other.id);
      if (listed !== undefined) return listed;
      const { archivedAt: _archivedAt, validUntil: _validUntil, ...putBack } = other;
      return putBack;
    });
  }
  const saved = written.value;
  if (saved.id !== optimisticId) {
    removeEntry(document, optimisticId);
    delete document.serverCursors[optimisticId];
  }
  applyOwnWrite(document, saved.id, written.changeCursor, saved);
  for (const id of written.archived) {
    const other = document.entries.find((e) => e.id === id);
    if (other !== undefined && other.archivedAt === undefined) {
      other.archivedAt = saved.createdAt;
      if (saved.eventTime !== undefined) other.validUntil = saved.eventTime;
    }
  }
}

/** Whether the server refused a save for its event time (INVALID_ARGUMENT on `memory.event_time`). */
function refusesEventTime(error: unknown): boolean {
  return (
    error instanceof MnemoError &&
    error.code === Code.InvalidArgument &&
    error.fieldViolations.some((v) => v.field.endsWith("event_time"))
  );
}
