/**
 * Drop-in memory adapters with the seed SDKs' own interfaces, backed by Mnemo:
 *
 * - goliath: `mnemoMemory(client, { userId })` is a `memory` factory for
 *   `createAgent({ memory })` (WorkingMemoryService);
 * - Anvia: `new MnemoMemoryStore(client, { userId })` is a `MemoryStore` with
 *   `inspector` and `compaction` (ConversationService);
 * - gecx-chat: `createMnemoServerMemoryAdapter`, `createLocalMemoryAdapter`
 *   and `createMnemoHybridMemoryAdapter` (MemoryService + SyncService).
 *
 * The SDKs' types live in the `goliath`, `anvia` and `gecx` namespaces (their
 * names overlap: Anvia and gecx-chat both have a `MemoryScope`).
 */

export { emptyMemoryState, mergeStates, mnemoMemory, type MnemoMemoryOptions } from "./goliath.js";
export * as goliath from "./goliath.js";

export { MnemoMemoryStore, type MnemoMemoryStoreOptions } from "./anvia/store.js";
export * as anvia from "./anvia/types.js";

export type { PendingWrite } from "./gecx/cache-document.js";
export {
  createMnemoHybridMemoryAdapter,
  MnemoHybridMemoryAdapter,
  type HybridEvent,
  type HybridMemoryAdapterOptions,
  type RemoteFailurePolicy,
} from "./gecx/hybrid.js";
export { createLocalMemoryAdapter, LocalMemoryAdapter, type LocalMemoryAdapterOptions } from "./gecx/local.js";
export {
  createMnemoServerMemoryAdapter,
  MnemoServerMemoryAdapter,
  type MnemoServerMemoryAdapterOptions,
} from "./gecx/server.js";
export {
  createMemoryStorage,
  InMemoryAsyncStorage,
  InMemoryLocalStorage,
  type AsyncStorageLike,
  type KeyValueStorage,
  type LocalStorageLike,
} from "./gecx/storage.js";
export * as gecx from "./gecx/types.js";

export { fromMnemoId, toMnemoId } from "./ids.js";
export { isTransient, type WriteRetry } from "./failures.js";
