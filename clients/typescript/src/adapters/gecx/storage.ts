/**
 * The key-value stores a local memory cache can live in. Both shapes are the
 * platforms' own, so the real thing fits as it is:
 *
 * - `LocalStorageLike`: synchronous, like the browser's `localStorage` (or
 *   MMKV with a one-line wrapper);
 * - `AsyncStorageLike`: asynchronous, like React Native's `AsyncStorage`.
 *
 * The in-memory implementations below behave like them in Node (and in tests).
 */

/** A synchronous string store shaped like the browser's `localStorage`. */
export interface LocalStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** An asynchronous string store shaped like React Native's `AsyncStorage`. */
export interface AsyncStorageLike {
  getItem(key: string): Promise<string | null>;
  setItem(key: string, value: string): Promise<void>;
  removeItem(key: string): Promise<void>;
}

/** Any store a local cache accepts. */
export type KeyValueStorage = LocalStorageLike | AsyncStorageLike;

/** `localStorage` semantics in memory: values are strings, copies on the way in and out. */
export class InMemoryLocalStorage implements LocalStorageLike {
  private readonly items = new Map<string, string>();

  get length(): number {
    return this.items.size;
  }

  key(index: number): string | null {
    return [...this.items.keys()][index] ?? null;
  }

  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }

  setItem(key: string, value: string): void {
    this.items.set(key, String(value));
  }

  removeItem(key: string): void {
    this.items.delete(key);
  }

  clear(): void {
    this.items.clear();
  }
}

/** `AsyncStorage` semantics in memory: every call resolves on a later tick. */
export class InMemoryAsyncStorage implements AsyncStorageLike {
  private readonly items = new Map<string, string>();

  async getItem(key: string): Promise<string | null> {
    await Promise.resolve();
    return this.items.get(key) ?? null;
  }

  async setItem(key: string, value: string): Promise<void> {
    await Promise.resolve();
    this.items.set(key, String(value));
  }

  async removeItem(key: string): Promise<void> {
    await Promise.resolve();
    this.items.delete(key);
  }

  async getAllKeys(): Promise<string[]> {
    await Promise.resolve();
    return [...this.items.keys()];
  }

  async clear(): Promise<void> {
    await Promise.resolve();
    this.items.clear();
  }
}

/** gecx-chat's `createMemoryStorage()`: storage that lives as long as the process. */
export function createMemoryStorage(): InMemoryAsyncStorage {
  return new InMemoryAsyncStorage();
}
