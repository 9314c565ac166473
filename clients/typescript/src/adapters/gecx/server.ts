/**
 * gecx-chat's server memory adapter over Mnemo's MemoryService:
 *
 *     const remote = createMnemoServerMemoryAdapter(client, { userId: "u1" });
 *
 * Writes reject with a MnemoError whose `reason` is the gecx-chat error code
 * where there is one (MEMORY_CONSENT_WITHDRAWN, MEMORY_DISABLED,
 * TEMPORARY_CONVERSATION). Reads never reject: a memory failure must not block
 * a send, so `list` and `recall` degrade to nothing and report the error to
 * `onReadError`. `fetchList` and `fetchRecall` are the same reads that reject.
 *
 * A save stores a fact once: saving what is already a live entry (the same
 * normalised text, scope, conversation and key) stores nothing and answers
 * that entry, under its own id rather than the `id` asked for; `saveResult`
 * also tells what the save did ("created", "historical", "duplicate").
 */

import { Code } from "@connectrpc/connect";
import type { MnemoClient } from "../../client.js";
import type { Memory } from "../../gen/mnemo/v1/memories_pb.js";
import { hasCode } from "../failures.js";
import { conversationName, userName } from "../ids.js";
import { toEntry, toMemoryInit, toOutcome, toRecallInit, toScopeEnum, toSignals } from "./convert.js";
import type {
  ListMemoryOptions,
  MemoryAdapter,
  MemoryEntry,
  RecallMemoryQuery,
  RecalledMemory,
  DeleteMemoryOptions,
  SaveMemoryInput,
  SaveOutcome,
  SaveResult,
  UpdateMemoryInput,
} from "./types.js";

export interface MnemoServerMemoryAdapterOptions {
  /** The Mnemo user whose memories these are. */
  userId: string;
  /** Told about every read failure `list` or `recall` turned into an empty answer. */
  onReadError?: (error: unknown, operation: "list" | "recall") => void;
}

/** A server write's result: the entry and the feed cursor of the change it made. */
export interface ServerWrite<T> {
  value: T;
  changeCursor: bigint;
  /** Ids of the entries a keyed save archived. */
  archived?: string[];
}

/** A CreateMemory's result: a server write that also says what the save did. */
export interface ServerSave extends ServerWrite<MemoryEntry> {
  /** With "duplicate", `value` is the live entry that already states the fact (another id). */
  outcome: SaveOutcome;
  archived: string[];
}

/** gecx-chat's `createServerMemoryAdapter(...)`, backed by Mnemo. */
export function createMnemoServerMemoryAdapter(
  client: MnemoClient,
  options: MnemoServerMemoryAdapterOptions,
): MnemoServerMemoryAdapter {
  return new MnemoServerMemoryAdapter(client, options);
}

export class MnemoServerMemoryAdapter implements MemoryAdapter {
  readonly userId: string;

  constructor(
    readonly client: MnemoClient,
    private readonly options: MnemoServerMemoryAdapterOptions,
  ) {
    this.userId = options.userId;
  }

  /** A new entry; for a fact already live, that entry (see the module). */
  async save(input: SaveMemoryInput): Promise<MemoryEntry> {
    return (await this.create(input)).value;
  }

  /** `save`, with what it did: "created", "historical" (an earlier version of its key) or "duplicate". */
  async saveResult(input: SaveMemoryInput): Promise<SaveResult> {
    const written = await this.create(input);
    return { entry: written.value, outcome: written.outcome };
  }

  /**
   * CreateMemory, with the client-chosen `input.id` when given and the request
   * id given (a replay of a kept write) or a fresh one.
   */
  async create(input: SaveMemoryInput, requestId = ""): Promise<ServerSave> {
    const response = await this.client.memories.createMemory({
      parent: userName(this.userId),
      memory: toMemoryInit(this.userId, input),
      memoryId: input.id ?? "",
      requestId,
      originConversation: this.origin(input.originConversationId ?? input.conversationId),
    });
    return {
      value: toEntry(required(response.memory)),
      changeCursor: response.changeCursor,
      archived: response.archived.map((name) => name.slice(name.lastIndexOf("/") + 1)),
      outcome: toOutcome(response.outcome),
    };
  }

  async update(id: string, patch: UpdateMemoryInput): Promise<MemoryEntry> {
    return (await this.patch(id, patch)).value;
  }

  /** UpdateMemory of the fields `patch` sets (unconditional: the server's state wins). */
  async patch(id: string, patch: UpdateMemoryInput): Promise<ServerWrite<MemoryEntry>> {
    const paths: string[] = [];
    if (patch.text !== undefined) paths.push("text");
    if (patch.metadata !== undefined) paths.push("metadata");
    if (patch.pinned !== undefined) paths.push("pinned");
    const response = await this.client.memories.updateMemory({
      memory: {
        name: this.memoryName(id),
        text: patch.text ?? "",
        metadata: { ...(patch.metadata ?? {}) },
        pinned: patch.pinned ?? false,
      },
      updateMask: { paths },
      originConversation: this.origin(patch.originConversationId),
    });
    return { value: toEntry(required(response.memory)), changeCursor: response.changeCursor };
  }

  async delete(id: string, options: DeleteMemoryOptions = {}): Promise<void> {
    await this.remove(id, options);
  }

  /** DeleteMemory; an entry already gone counts as deleted (cursor 0). */
  async remove(id: string, options: DeleteMemoryOptions = {}): Promise<ServerWrite<void>> {
    try {
      const response = await this.client.memories.deleteMemory({
        name: this.memoryName(id),
        originConversation: this.origin(options.originConversationId),
      });
      return { value: undefined, changeCursor: response.changeCursor };
    } catch (error) {
      if (hasCode(error, Code.NotFound)) return { value: undefined, changeCursor: 0n };
      throw error;
    }
  }

  async list(options: ListMemoryOptions = {}): Promise<MemoryEntry[]> {
    try {
      return await this.fetchList(options);
    } catch (error) {
      this.options.onReadError?.(error, "list");
      return [];
    }
  }

  /** ListMemories, every page (up to `limit`), newest first. Rejects with MnemoError. */
  async fetchList(options: ListMemoryOptions = {}): Promise<MemoryEntry[]> {
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    const found: Memory[] = [];
    let pageToken = "";
    do {
      const page = await this.client.memories.listMemories({
        parent: userName(this.userId),
        pageSize: Math.min(500, limit - found.length),
        pageToken,
        scope: toScopeEnum(options.scope),
        conversation:
          options.conversationId === undefined ? "" : conversationName(this.userId, options.conversationId),
        includeArchived: options.includeArchived ?? false,
        key: options.key ?? "",
      });
      found.push(...page.memories);
      pageToken = page.nextPageToken;
    } while (pageToken && found.length < limit);
    return found.slice(0, limit).map(toEntry);
  }

  async recall(query: RecallMemoryQuery): Promise<RecalledMemory[]> {
    try {
      return await this.fetchRecall(query);
    } catch (error) {
      this.options.onReadError?.(error, "recall");
      return [];
    }
  }

  /** RecallMemories, the whole stream, best first. Rejects with MnemoError. */
  async fetchRecall(query: RecallMemoryQuery): Promise<RecalledMemory[]> {
    const results: RecalledMemory[] = [];
    const stream = this.client.memories.recallMemories({
      parent: userName(this.userId),
      ...toRecallInit(this.userId, query),
    });
    for await (const item of stream) {
      results.push({
        entry: toEntry(required(item.memory)),
        score: item.score,
        rank: item.rank,
        signals: toSignals(item.signals),
      });
    }
    return results;
  }

  private memoryName(id: string): string {
    return `${userName(this.userId)}/memories/${id}`;
  }

  /** `origin_conversation`: the named conversation of this user, "" for none. */
  private origin(conversationId: string | undefined): string {
    return conversationId ? conversationName(this.userId, conversationId) : "";
  }
}

function required(memory: Memory | undefined): Memory {
  if (memory === undefined) throw new Error("the server answered without the memory");
  return memory;
}
