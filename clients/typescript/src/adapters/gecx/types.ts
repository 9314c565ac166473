/**
 * gecx-chat's long-term memory shapes, as its guide describes them: entries
 * saved with `memory.save({ text, key?, scope? })`, identity-wide or scoped to
 * a conversation, append-only with key supersede (`archivedAt`), and adapters
 * with save / update / delete / list / recall.
 */

/** Identity-wide (the default) or scoped to one conversation. */
export type MemoryScope = "identity" | "conversation";

/** Who wrote an entry. */
export type MemorySource = "tool" | "extractor" | "user" | "import";

/** One remembered fact. Times are epoch milliseconds. */
export type MemoryEntry = {
  id: string;
  text: string;
  key?: string | undefined;
  scope: MemoryScope;
  /** With conversation scope, the conversation it belongs to. */
  conversationId?: string | undefined;
  source: MemorySource;
  metadata: Record<string, string>;
  pinned: boolean;
  createdAt: number;
  updatedAt: number;
  /** Set when a later save with the same (scope, key) superseded this entry. */
  archivedAt?: number | undefined;
  /** When the fact was stated or observed (the save's time unless the save gave one). */
  eventTime?: number | undefined;
  /**
   * For a superseded keyed entry: the event time of the entry that superseded it (the fact held
   * from `eventTime` until then). Unset: still valid.
   */
  validUntil?: number | undefined;
};

/** `memory.save(...)`: a new entry; a `key` supersedes the older entries of the same (scope, key). */
export type SaveMemoryInput = {
  text: string;
  key?: string | undefined;
  scope?: MemoryScope | undefined;
  /** Required with conversation scope: the active conversation. */
  conversationId?: string | undefined;
  source?: MemorySource | undefined;
  metadata?: Record<string, string> | undefined;
  pinned?: boolean | undefined;
  /**
   * A client-chosen id (an offline device names the entry first); generated when absent. A save
   * of a fact that is already a live entry stores nothing and answers that entry, under its own id.
   */
  id?: string | undefined;
  /**
   * When the fact was stated (the turn's time), epoch ms: a keyed save of an older fact than the
   * live entry of its key is stored as an earlier version. From 1970 to 24 hours ahead of the
   * server's clock. Absent: the server's clock (the hybrid adapter: the device's, when `save` was called).
   */
  eventTime?: number | undefined;
  /**
   * The conversation (session) the save is made in; `conversationId` by default. The server
   * refuses a save from a temporary conversation (TEMPORARY_CONVERSATION) whatever its scope.
   */
  originConversationId?: string | undefined;
};

/**
 * What a save did: stored as the current entry (of its key); stored as an earlier version of its
 * key (an entry of the key with a later event time is current); or nothing stored (the same fact
 * is already a live entry of the same scope, conversation and key: the entry is that one).
 */
export type SaveOutcome = "created" | "historical" | "duplicate";

/** A save's entry and what the save did with it (with "duplicate", the live entry, its own id). */
export type SaveResult = {
  entry: MemoryEntry;
  outcome: SaveOutcome;
};

/** `memory.update(id, patch)`: the fields to change. */
export type UpdateMemoryInput = {
  text?: string | undefined;
  metadata?: Record<string, string> | undefined;
  pinned?: boolean | undefined;
  /** The conversation the update is made in (a temporary one refuses it), as for a save. */
  originConversationId?: string | undefined;
};

/** `memory.delete(id, options)`: where the delete comes from. */
export type DeleteMemoryOptions = {
  /** The conversation the delete is made in (a temporary one refuses it), as for a save. */
  originConversationId?: string | undefined;
};

/** Which entries `list` returns: by default the newest unarchived entry per key, newest first. */
export type ListMemoryOptions = {
  scope?: MemoryScope | undefined;
  conversationId?: string | undefined;
  key?: string | undefined;
  includeArchived?: boolean | undefined;
  limit?: number | undefined;
};

/** `memory.recall(...)`: what to look for. */
export type RecallMemoryQuery = {
  query: string;
  /** The active conversation: its entries are searched too, and rank higher. */
  conversationId?: string | undefined;
  /** Which scopes to search; default both. */
  scope?: MemoryScope | "all" | undefined;
  maxResults?: number | undefined;
  /**
   * The minimum `score` of a recalled entry. Unset: the server's minimum
   * relevance (0.5 with its default embedder; none when it recalls by words
   * only), so a query nothing saved is about recalls nothing; 0 recalls every
   * match.
   */
  minScore?: number | undefined;
  /** Fuse vector similarity (true), text only (false); unset: the server's default. */
  semantic?: boolean | undefined;
};

/** A recalled entry, best first. */
export type RecalledMemory = {
  entry: MemoryEntry;
  /**
   * From the server: the entry's relevance to the query, 0 to 1, on one scale
   * across users and queries (0.5 separates "about this" from "not about
   * this"). From a local cache (offline): the share of the query's words the
   * entry has, plus 0.5 for the conversation's own and 0.1 when pinned.
   */
  score: number;
  rank: number;
  signals: ("lexical" | "semantic" | "conversation" | "pinned")[];
};

/** What gecx-chat's memory subsystem calls on an adapter. */
export interface MemoryAdapter {
  save(input: SaveMemoryInput): Promise<MemoryEntry>;
  update(id: string, patch: UpdateMemoryInput): Promise<MemoryEntry>;
  delete(id: string, options?: DeleteMemoryOptions): Promise<void>;
  list(options?: ListMemoryOptions): Promise<MemoryEntry[]>;
  recall(query: RecallMemoryQuery): Promise<RecalledMemory[]>;
}
