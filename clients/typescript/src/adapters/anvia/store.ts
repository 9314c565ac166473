/**
 * Anvia's `MemoryStore` over Mnemo's ConversationService:
 *
 *     const agent = new AgentBuilder("support", model)
 *       .memory(new MnemoMemoryStore(client, { userId: "u1" }), { savePolicy: "turn" })
 *       .build();
 *
 * A session is the conversation `users/{scope.userId ?? userId}/conversations/{sessionId}`.
 * Every `append` is exactly one AppendMessages (500 messages or fewer) at the
 * end of the canonical history, with the run id and turn Anvia gave; so the
 * save policy Anvia applies is the write pattern Mnemo sees: "message" one
 * write per completed message, "turn" one per model/tool turn, "run" one after
 * the final response. Writes carry request ids derived from what they write,
 * so a retry (ours after a lost response, or Anvia's own) is applied once.
 */

import type { MnemoClient } from "../../client.js";
import type { HistoryMessage } from "../../gen/mnemo/v1/conversations_pb.js";
import { Code } from "@connectrpc/connect";
import { DEFAULT_WRITE_RETRY, hasCode, hasReason, withRetries, type WriteRetry } from "../failures.js";
import { conversationName, deterministicRequestId, fromMnemoId, lastSegment, userName, userOf } from "../ids.js";
import { toIso } from "../time.js";
import { fromHistoryMessage, toHistoryInputs, toRunError } from "./messages.js";
import type {
  MemoryAppendOptions,
  MemoryClearOptions,
  MemoryCompactionCapability,
  MemoryCompactionReplacePrefixOptions,
  MemoryCompactionReplacePrefixResult,
  MemoryCompactionSnapshot,
  MemoryCompactionSnapshotOptions,
  MemoryConversation,
  MemoryConversationGetOptions,
  MemoryConversationListOptions,
  MemoryConversationSummary,
  MemoryErrorOptions,
  MemoryInspector,
  MemoryLoadOptions,
  MemoryScope,
  MemoryStore,
  Message,
} from "./types.js";
import type { Conversation } from "../../gen/mnemo/v1/conversations_pb.js";

/** The most messages one AppendMessages takes. */
const MAX_APPEND = 500;
/** The largest ListMessages page. */
const PAGE_SIZE = 1000;
const CONVERSATION_NAME = /^users\/[^/]+\/conversations\/[^/]+$/;

export interface MnemoMemoryStoreOptions {
  /** The Mnemo user of scopes without a `userId`. */
  userId: string;
  /** The adapter's own retries of transient write failures (on top of the client's). */
  retry?: Partial<WriteRetry>;
}

/** Anvia's `MemoryStore`, with the read-only `inspector` and the `compaction` capability. */
export class MnemoMemoryStore implements MemoryStore {
  readonly inspector: MemoryInspector;
  readonly compaction: MemoryCompactionCapability;
  private readonly retry: WriteRetry;

  constructor(
    private readonly client: MnemoClient,
    private readonly options: MnemoMemoryStoreOptions,
  ) {
    this.retry = { ...DEFAULT_WRITE_RETRY, ...options.retry };
    this.inspector = new Inspector(client, options.userId);
    this.compaction = new Compaction(client, this.retry, (scope) => this.conversation(scope));
  }

  /** The canonical, replayable history in position order; [] for a session never written. */
  async load({ scope }: MemoryLoadOptions): Promise<Message[]> {
    const messages = await listAllMessages(this.client, this.conversation(scope));
    return messages.map(fromHistoryMessage);
  }

  /**
   * Appends the messages at the end of the history in one write (or one per
   * 500 messages). Rejects with the MnemoError of a refusal (INVALID_MESSAGE,
   * FIELD_TOO_LARGE...) or of a server still unreachable after the retries.
   */
  async append({ scope, runId, turn, messages }: MemoryAppendOptions): Promise<void> {
    const conversation = this.conversation(scope);
    for (let start = 0; start < messages.length; start += MAX_APPEND) {
      const batch = toHistoryInputs(messages.slice(start, start + MAX_APPEND));
      const requestId = deterministicRequestId(
        "anvia-append",
        conversation,
        runId,
        turn,
        start,
        batch,
        scope.metadata ?? null,
      );
      await withRetries(this.retry, () =>
        this.client.conversations.appendMessages({
          conversation,
          messages: batch,
          runId,
          turn,
          requestId,
          metadata: scope.metadata,
        }),
      );
    }
  }

  /** Removes the session's messages (failed runs are kept); a session never written is a no-op. */
  async clear({ scope }: MemoryClearOptions): Promise<void> {
    const conversation = this.conversation(scope);
    try {
      await withRetries(this.retry, () => this.client.conversations.clearMessages({ conversation }));
    } catch (error) {
      if (!hasCode(error, Code.NotFound)) throw error;
    }
  }

  /** Records the failed run with its error and partial messages, apart from the history. */
  async recordError({ scope, runId, error, messages }: MemoryErrorOptions): Promise<void> {
    const conversation = this.conversation(scope);
    const runError = toRunError(error);
    const partial = toHistoryInputs(messages);
    const requestId = deterministicRequestId("anvia-error", conversation, runId, runError, partial);
    await withRetries(this.retry, () =>
      this.client.conversations.recordFailedRun({
        conversation,
        runId,
        error: runError,
        messages: partial,
        requestId,
      }),
    );
  }

  private conversation(scope: MemoryScope): string {
    return conversationName(scope.userId ?? this.options.userId, scope.sessionId);
  }
}

class Inspector implements MemoryInspector {
  constructor(
    private readonly client: MnemoClient,
    private readonly defaultUserId: string,
  ) {}

  /** The user's conversations, most recently updated first, at most `limit`. */
  async listConversations({ limit, userId }: MemoryConversationListOptions): Promise<MemoryConversationSummary[]> {
    const parent = userName(userId ?? this.defaultUserId);
    const found: MemoryConversationSummary[] = [];
    let pageToken = "";
    while (found.length < limit) {
      const page = await this.client.conversations.listConversations({
        parent,
        pageSize: Math.min(limit - found.length, 500),
        pageToken,
      });
      found.push(...page.conversations.map(toSummary));
      pageToken = page.nextPageToken;
      if (!pageToken) break;
    }
    return found.slice(0, limit);
  }

  /** The conversation `ref` names with its messages; undefined when there is none. */
  async getConversation({ ref }: MemoryConversationGetOptions): Promise<MemoryConversation | undefined> {
    if (!CONVERSATION_NAME.test(ref)) return undefined;
    try {
      const { conversation } = await this.client.conversations.getConversation({ name: ref });
      if (conversation === undefined) return undefined;
      const messages = await listAllMessages(this.client, ref);
      return {
        ...toSummary(conversation),
        messages: messages.map((m) => ({
          position: Number(m.position),
          runId: m.runId,
          turn: m.turn,
          createdAt: toIso(m.createTime),
          message: fromHistoryMessage(m),
        })),
      };
    } catch (error) {
      if (hasCode(error, Code.NotFound)) return undefined;
      throw error;
    }
  }
}

class Compaction implements MemoryCompactionCapability {
  constructor(
    private readonly client: MnemoClient,
    private readonly retry: WriteRetry,
    private readonly conversation: (scope: MemoryScope) => string,
  ) {}

  /** The model-context projection and its revision; a session never written has none. */
  async snapshot({ scope }: MemoryCompactionSnapshotOptions): Promise<MemoryCompactionSnapshot> {
    try {
      const response = await this.client.conversations.snapshotHistory({
        conversation: this.conversation(scope),
      });
      return { revision: response.revision, messages: response.messages.map(fromHistoryMessage) };
    } catch (error) {
      if (hasCode(error, Code.NotFound)) return { revision: "", messages: [] };
      throw error;
    }
  }

  /**
   * Replaces the projection's first `messageCount` messages with the summary
   * (canonical messages are kept). "conflict" when the revision is stale: the
   * history was compacted or cleared since the snapshot (or deleted).
   */
  async replacePrefix(options: MemoryCompactionReplacePrefixOptions): Promise<MemoryCompactionReplacePrefixResult> {
    const conversation = this.conversation(options.scope);
    const replacement = toHistoryInputs([options.replacement]);
    const requestId = deterministicRequestId(
      "anvia-compact",
      conversation,
      options.revision,
      options.messageCount,
      replacement,
      options.runId,
    );
    try {
      await withRetries(this.retry, () =>
        this.client.conversations.replaceHistoryPrefix({
          conversation,
          revision: options.revision,
          messageCount: BigInt(options.messageCount),
          replacement,
          runId: options.runId,
          requestId,
        }),
      );
      return { status: "committed" };
    } catch (error) {
      if (hasReason(error, "REVISION_STALE") || hasCode(error, Code.NotFound)) {
        return { status: "conflict" };
      }
      throw error;
    }
  }
}

/** Every message of a conversation in position order; [] when it does not exist. */
async function listAllMessages(client: MnemoClient, parent: string): Promise<HistoryMessage[]> {
  const messages: HistoryMessage[] = [];
  let pageToken = "";
  try {
    do {
      const page = await client.conversations.listMessages({ parent, pageSize: PAGE_SIZE, pageToken });
      messages.push(...page.messages);
      pageToken = page.nextPageToken;
    } while (pageToken);
  } catch (error) {
    if (hasCode(error, Code.NotFound)) return [];
    throw error;
  }
  return messages;
}

function toSummary(conversation: Conversation): MemoryConversationSummary {
  return {
    ref: conversation.name,
    sessionId: fromMnemoId(lastSegment(conversation.name)),
    userId: userOf(conversation.name),
    metadata: conversation.metadata,
    createdAt: toIso(conversation.createTime),
    updatedAt: toIso(conversation.updateTime),
    messageCount: Number(conversation.messageCount),
  };
}
