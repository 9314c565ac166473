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
  /** A client-chosen id (an offline device names the entry first); generated when absent. */
  id?: string | undefined;
  /**
   * The conversation (session) the save is made in; `conversationId` by default. The server
   * refuses a save from a temporary conversation (TEMPORARY_CONVERSATION) whatever its scope.
   */
  originConversationId?: string | undefined;
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
  minScore?: number | undefined;
  /** Fuse vector similarity (true), text only (false); unset: the server's default. */
  semantic?: boolean | undefined;
};

/** A recalled entry, best first. */
export type RecalledMemory = {
  entry: MemoryEntry;
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
