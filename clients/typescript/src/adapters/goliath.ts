/**
 * goliath's `memory` factory over Mnemo's WorkingMemoryService:
 *
 *     createAgent({ model, memory: mnemoMemory(client, { userId: "u1" }) })
 *
 * Each conversation id gets its own `Memory` (`undefined` is the user's default
 * conversation, `users/{user}/memoryState`, distinct from every named one).
 * `load` never fails: what cannot be read comes back as an empty state, as
 * goliath promises for corrupt data. `save` replaces the state conditionally on
 * the etag its `load` (or its previous `save`) saw; when another device wrote
 * in between, it merges instead of overwriting (see `mergeStates`).
 */

import type { MnemoClient } from "../client.js";
import type {
  Exchange as ExchangeMessage,
  MemoryState as MemoryStateMessage,
} from "../gen/mnemo/v1/working_memory_pb.js";
import { hasReason } from "./failures.js";
import { conversationName, userName } from "./ids.js";
import { fromMs, toMs } from "./time.js";

/** One question and its answer (goliath's `Exchange`; `at` in epoch ms). */
export type Exchange = { ask: string; answer: string; at: number };

/** goliath's `MemoryState`: a rolling summary and the last exchanges verbatim. */
export type MemoryState = {
  summary: string;
  recent: Exchange[];
};

/** goliath's `Memory`. */
export type Memory = {
  load(): Promise<MemoryState>;
  save(state: MemoryState): Promise<void>;
};

/** goliath's memory factory: `undefined` is the default conversation. */
export type MemoryFactory = (conversationId?: string) => Memory;

export interface MnemoMemoryOptions {
  /** The Mnemo user whose working memory this is (the token's subject under --auth jwt). */
  userId: string;
  /** Exchanges kept verbatim when a merge has to choose. Default 3 (goliath's). */
  keepRecent?: number;
  /** Times `save` re-reads and merges after a conflicting write elsewhere. Default 3. */
  maxConflictRetries?: number;
  /** Told about every failure `load` turned into an empty state. */
  onLoadError?: (error: unknown, conversationId: string | undefined) => void;
}

/** An empty working memory. */
export function emptyMemoryState(): MemoryState {
  return { summary: "", recent: [] };
}

/**
 * goliath's `memory` factory backed by Mnemo. The factory hands out one
 * `Memory` per conversation id and keeps it, so the etag a conversation's
 * `load` saw is the one its `save` sends.
 */
export function mnemoMemory(client: MnemoClient, options: MnemoMemoryOptions): MemoryFactory {
  const memories = new Map<string | undefined, Memory>();
  return (conversationId?: string) => {
    let memory = memories.get(conversationId);
    if (memory === undefined) {
      memory = new ConversationMemory(client, options, conversationId);
      memories.set(conversationId, memory);
    }
    return memory;
  };
}

/** What this process last read or wrote: the base a `save` is conditional on. */
interface Seen {
  etag: string;
  state: MemoryState;
}

class ConversationMemory implements Memory {
  private readonly name: string;
  private seen: Seen | undefined;

  constructor(
    private readonly client: MnemoClient,
    private readonly options: MnemoMemoryOptions,
    private readonly conversationId: string | undefined,
  ) {
    this.name =
      conversationId === undefined
        ? `${userName(options.userId)}/memoryState`
        : `${conversationName(options.userId, conversationId)}/memoryState`;
  }

  async load(): Promise<MemoryState> {
    try {
      this.seen = await this.read();
      return copyState(this.seen.state);
    } catch (error) {
      this.seen = undefined;
      this.options.onLoadError?.(error, this.conversationId);
      return emptyMemoryState();
    }
  }

  /**
   * Writes `state`. Rejects with the MnemoError of the server's refusal (e.g.
   * SUMMARY_OVER_BUDGET) or of an unreachable server; a write by someone else
   * since our read is merged and retried, never overwritten.
   */
  async save(state: MemoryState): Promise<void> {
    const retries = this.options.maxConflictRetries ?? 3;
    // What the agent started from: its changes are what differs from this.
    const base = this.seen?.state;
    let current = this.seen;
    let toWrite = state;
    for (let attempt = 0; ; attempt++) {
      if (current === undefined) {
        current = await this.read();
        toWrite = mergeStates(base, state, current.state, this.options.keepRecent ?? 3);
      }
      try {
        const response = await this.client.workingMemory.saveMemoryState({
          memoryState: {
            name: this.name,
            summary: toWrite.summary,
            recent: toWrite.recent.map(toExchangeInit),
            etag: current.etag,
          },
        });
        this.seen = fromMessage(response.memoryState);
        return;
      } catch (error) {
        if (!hasReason(error, "ETAG_MISMATCH") || attempt >= retries) throw error;
        current = undefined;
      }
    }
  }

  private async read(): Promise<Seen> {
    const response = await this.client.workingMemory.getMemoryState({ name: this.name });
    return fromMessage(response.memoryState);
  }
}

/**
 * The state to write when `theirs` (the stored state) moved on from `base`
 * (what the agent loaded; undefined when its load failed) while the agent
 * produced `ours`: their exchanges plus the ones the agent added, oldest
 * first, the newest `keepRecent` kept (or as many as the agent kept, if more);
 * the agent's summary if it changed it, else theirs. Nothing the other writer
 * added is overwritten, though exchanges that fall off the end are not folded
 * into the summary (goliath's scribe runs on the device, not here).
 */
export function mergeStates(
  base: MemoryState | undefined,
  ours: MemoryState,
  theirs: MemoryState,
  keepRecent: number,
): MemoryState {
  const key = (e: Exchange) => JSON.stringify([e.at, e.ask, e.answer]);
  const known = new Set((base?.recent ?? []).map(key));
  const merged = new Map(theirs.recent.map((e) => [key(e), e] as const));
  for (const exchange of ours.recent) {
    if (!known.has(key(exchange))) merged.set(key(exchange), exchange);
  }
  const recent = [...merged.values()].sort((a, b) => a.at - b.at);
  const keep = Math.max(keepRecent, ours.recent.length);
  const oursChangedSummary = base === undefined ? ours.summary !== "" : ours.summary !== base.summary;
  return {
    summary: oursChangedSummary ? ours.summary : theirs.summary,
    recent: recent.slice(Math.max(0, recent.length - keep)),
  };
}

function fromMessage(message: MemoryStateMessage | undefined): Seen {
  return {
    etag: message?.etag ?? "",
    state: {
      summary: message?.summary ?? "",
      recent: (message?.recent ?? []).map(fromExchange),
    },
  };
}

function fromExchange(exchange: ExchangeMessage): Exchange {
  return { ask: exchange.ask, answer: exchange.answer, at: toMs(exchange.at) };
}

function toExchangeInit(exchange: Exchange) {
  // Without a usable `at` the server stamps the time of the write.
  const at = Number.isFinite(exchange.at) && exchange.at > 0 ? fromMs(exchange.at) : undefined;
  return { ask: exchange.ask, answer: exchange.answer, at };
}

function copyState(state: MemoryState): MemoryState {
  return { summary: state.summary, recent: state.recent.map((e) => ({ ...e })) };
}
