/**
 * Anvia's memory contracts (`@anvia/core/memory`), reproduced structurally so
 * that this package does not depend on Anvia: a `MnemoMemoryStore` is
 * assignable to Anvia's `MemoryStore` as it is.
 */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** A message's role. */
export type MessageRole = "system" | "user" | "assistant" | "tool";

/** A content part: text, image, file, tool-call, tool-result (or a newer type). */
export type MessagePart = { type: string; [member: string]: unknown };

/** An Anvia message: a role and content that is a string or a list of parts. */
export type Message = {
  role: MessageRole;
  content: string | MessagePart[];
  metadata?: JsonObject | undefined;
  [member: string]: unknown;
};

/** Anvia's save policies (applied by Anvia's agent, which calls `append`). */
export type MemorySavePolicy = "message" | "turn" | "run";

export type MemoryScope = {
  sessionId: string;
  userId?: string | undefined;
  metadata?: JsonObject | undefined;
};

export type MemoryLoadOptions = { scope: MemoryScope };
export type MemoryClearOptions = { scope: MemoryScope };

export type MemoryAppendOptions = {
  scope: MemoryScope;
  runId: string;
  turn: number;
  messages: Message[];
};

export type MemoryErrorOptions = {
  scope: MemoryScope;
  runId: string;
  error: unknown;
  messages: Message[];
};

export type MemoryConversationListOptions = { limit: number; userId?: string | undefined };
export type MemoryConversationGetOptions = { ref: string };

export type MemoryConversationSummary = {
  /** Opaque, store-specific reference: here the conversation's resource name. */
  ref: string;
  sessionId: string;
  userId?: string | undefined;
  metadata?: JsonObject | undefined;
  createdAt: string;
  updatedAt: string;
  messageCount: number;
};

export type MemoryConversationMessage = {
  position: number;
  runId: string;
  turn: number;
  createdAt: string;
  message: Message;
};

export type MemoryConversation = MemoryConversationSummary & {
  messages: MemoryConversationMessage[];
};

/** Optional, read-only discovery surface for developer tooling. */
export interface MemoryInspector {
  listConversations(options: MemoryConversationListOptions): Promise<MemoryConversationSummary[]>;
  getConversation(options: MemoryConversationGetOptions): Promise<MemoryConversation | undefined>;
}

export type MemoryCompactionMessage = {
  role: "system";
  content: string | MessagePart[];
  [member: string]: unknown;
  metadata: {
    anvia: { memoryCompaction: { version: 1; compactedMessageCount: number } };
  };
};

export type MemoryCompactionSnapshot = {
  /** Opaque store revision used to reject stale compaction replacements. */
  revision: string;
  messages: Message[];
};

export type MemoryCompactionSnapshotOptions = { scope: MemoryScope };

export type MemoryCompactionReplacePrefixOptions = {
  scope: MemoryScope;
  revision: string;
  messageCount: number;
  replacement: MemoryCompactionMessage;
  runId: string;
};

export type MemoryCompactionReplacePrefixResult = { status: "committed" | "conflict" };

/** Optional atomic prefix-replacement capability used by automatic memory compaction. */
export interface MemoryCompactionCapability {
  snapshot(options: MemoryCompactionSnapshotOptions): Promise<MemoryCompactionSnapshot>;
  replacePrefix(
    options: MemoryCompactionReplacePrefixOptions,
  ): Promise<MemoryCompactionReplacePrefixResult>;
}

export interface MemoryStore {
  readonly inspector?: MemoryInspector | undefined;
  readonly compaction?: MemoryCompactionCapability | undefined;
  load(options: MemoryLoadOptions): Promise<Message[]>;
  append(options: MemoryAppendOptions): Promise<void>;
  clear(options: MemoryClearOptions): Promise<void>;
  recordError?(options: MemoryErrorOptions): Promise<void>;
}
