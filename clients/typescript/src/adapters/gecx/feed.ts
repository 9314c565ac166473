/**
 * Server-wins reconciliation of a local memory cache through Mnemo's change
 * feed (SyncService): catch up with ListChanges, follow WatchChanges, start
 * again from a full list when the cursor expired (CURSOR_EXPIRED) or came
 * from another database (CURSOR_AHEAD: beyond the user's latest cursor, e.g.
 * after a restore), drop everything on an erasure.
 *
 * Ordering: the feed delivers a user's changes in cursor order, and the
 * adapter's own write responses carry the cursor of the change they made; the
 * cache keeps, per entry, the cursor of the newest server state it applied,
 * so a change older than what the cache already has (say, the feed catching up
 * with a save this device has since updated) never overwrites it.
 */

import { Code } from "@connectrpc/connect";
import { ChangeOperation, type Change } from "../../gen/mnemo/v1/sync_pb.js";
import { hasCode, hasReason } from "../failures.js";
import { RESYNC_REASONS } from "../../follow.js";
import { lastSegment, userName } from "../ids.js";
import type { CacheDocument } from "./cache-document.js";
import { toEntry } from "./convert.js";
import type { LocalMemoryAdapter } from "./local.js";
import type { MnemoServerMemoryAdapter } from "./server.js";
import type { MemoryEntry } from "./types.js";

const PAGE_SIZE = 500;

/** What applying one change did to the cache. */
export type Applied = "upserted" | "deleted" | "erased" | "ignored";

/** Applies `change` to the document (server wins over anything older). */
export function applyChange(document: CacheDocument, change: Change, userId: string): Applied {
  let applied: Applied = "ignored";
  // Already applied (two catch-ups overlapping): applying it again could undo a newer change.
  if (change.cursor <= BigInt(document.cursor)) return applied;
  if (change.operation === ChangeOperation.ERASE) {
    document.entries = [];
    document.pending = [];
    document.serverCursors = {};
    applied = "erased";
  } else if (change.resourceName.startsWith(`${userName(userId)}/memories/`)) {
    const id = lastSegment(change.resourceName);
    if (change.cursor > BigInt(document.serverCursors[id] ?? "0")) {
      if (change.operation === ChangeOperation.UPSERT && change.state.case === "memory") {
        putEntry(document, toEntry(change.state.value));
        applied = "upserted";
      } else if (change.operation === ChangeOperation.DELETE) {
        removeEntry(document, id);
        applied = "deleted";
      }
      document.serverCursors[id] = String(change.cursor);
    }
  }
  document.cursor = String(change.cursor);
  return applied;
}

/**
 * Records the server's answer to this device's own write: applied unless the
 * cache already holds a newer server state of the entry.
 */
export function applyOwnWrite(
  document: CacheDocument,
  id: string,
  changeCursor: bigint,
  entry: MemoryEntry | undefined,
): void {
  const known = BigInt(document.serverCursors[id] ?? "0");
  if (changeCursor !== 0n && changeCursor < known) return;
  if (entry === undefined) removeEntry(document, id);
  else putEntry(document, entry);
  if (changeCursor > known) document.serverCursors[id] = String(changeCursor);
}

/** Forgets per-entry cursors the document cursor has passed: no older change can come any more. */
export function pruneServerCursors(document: CacheDocument): void {
  const cursor = BigInt(document.cursor);
  for (const [id, known] of Object.entries(document.serverCursors)) {
    if (BigInt(known) <= cursor) delete document.serverCursors[id];
  }
}

export function putEntry(document: CacheDocument, entry: MemoryEntry): void {
  const index = document.entries.findIndex((e) => e.id === entry.id);
  if (index < 0) document.entries.push(entry);
  else document.entries[index] = entry;
}

export function removeEntry(document: CacheDocument, id: string): void {
  document.entries = document.entries.filter((e) => e.id !== id);
}

/** Events a change follower reports. */
export type FeedEvent =
  | { type: "change"; change: Change; applied: Applied }
  | { type: "resynced"; cursor: bigint }
  | { type: "error"; error: unknown };

/** Pulls and applies the feed of one user into one cache. */
export class ChangeFeed {
  constructor(
    private readonly remote: MnemoServerMemoryAdapter,
    private readonly cache: LocalMemoryAdapter,
    private readonly emit: (event: FeedEvent) => void,
  ) {}

  private get parent(): string {
    return userName(this.remote.userId);
  }

  /**
   * Applies every change after the cache's cursor (ListChanges, page by page).
   * An expired cursor, or one of another database, starts again from a full list. Rejects with the
   * MnemoError of an unreachable server or of a server without SyncService
   * (UNIMPLEMENTED); what was applied before stays applied.
   */
  async pull(): Promise<void> {
    let resynced = false;
    for (;;) {
      const after = BigInt((await this.cache.read()).cursor);
      let page;
      try {
        page = await this.remote.client.sync.listChanges({
          parent: this.parent,
          afterCursor: after,
          pageSize: PAGE_SIZE,
        });
      } catch (error) {
        if (!needsResync(error) || resynced) throw error;
        await this.resyncFromList();
        resynced = true;
        continue;
      }
      if (page.changes.length > 0) await this.apply(page.changes);
      if (page.changes.length === 0 || page.nextCursor >= page.latestCursor) return;
    }
  }

  /**
   * Replaces the cached entries with a full list (archived ones included) and
   * moves the cursor to the newest change before that list, so that nothing
   * after it is missed (changes the list already shows are applied again, to
   * the same end state). Kept writes stay queued.
   */
  async resyncFromList(): Promise<void> {
    const head = await this.remote.client.sync.listChanges({
      parent: this.parent,
      afterCursor: 0n,
      pageSize: 1,
    });
    const entries = await this.remote.fetchList({ includeArchived: true });
    await this.cache.transact((document) => {
      document.entries = entries;
      document.serverCursors = {};
      document.cursor = String(head.latestCursor);
    });
    this.emit({ type: "resynced", cursor: head.latestCursor });
  }

  /**
   * Follows WatchChanges from the cache's cursor until `signal` aborts or the
   * stream ends; each change is applied as it arrives. Rejects like `pull`,
   * and with WATCH_LAGGING (resume from the cache's cursor).
   */
  async follow(signal: AbortSignal): Promise<void> {
    const after = BigInt((await this.cache.read()).cursor);
    const stream = this.remote.client.sync.watchChanges(
      { parent: this.parent, afterCursor: after },
      { signal, timeoutMs: 0 },
    );
    for await (const response of stream) {
      if (response.event.case === "change") await this.apply([response.event.value]);
    }
  }

  private async apply(changes: readonly Change[]): Promise<void> {
    const userId = this.remote.userId;
    const applied = await this.cache.transact((document) => {
      const results = changes.map((change) => applyChange(document, change, userId));
      pruneServerCursors(document);
      return results;
    });
    changes.forEach((change, index) => {
      this.emit({ type: "change", change, applied: applied[index] ?? "ignored" });
    });
  }
}

/** Whether a ListChanges or WatchChanges error means "start again from a full list". */
export function needsResync(error: unknown): boolean {
  return hasCode(error, Code.OutOfRange) && RESYNC_REASONS.some((reason) => hasReason(error, reason));
}

/** Whether a follow error means "reconnect at once" rather than "back off". */
export function isResumable(error: unknown): boolean {
  return hasReason(error, "WATCH_LAGGING") || needsResync(error) || hasCode(error, Code.DeadlineExceeded);
}
