/** gecx-chat's local memory adapter on each kind of storage (no server involved). */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  createLocalMemoryAdapter,
  createMemoryStorage,
  InMemoryAsyncStorage,
  InMemoryLocalStorage,
  type KeyValueStorage,
} from "../../src/adapters/index.js";
import { MnemoError } from "../../src/index.js";

const storages: [string, () => KeyValueStorage][] = [
  ["in-memory (createMemoryStorage)", createMemoryStorage],
  ["localStorage-like", () => new InMemoryLocalStorage()],
  ["AsyncStorage-like", () => new InMemoryAsyncStorage()],
];

for (const [kind, makeStorage] of storages) {
  describe(`local memory adapter on ${kind} storage`, () => {
    test("save, update, delete, list", async () => {
      const adapter = createLocalMemoryAdapter({ storage: makeStorage() });
      const vegan = await adapter.save({ text: "Prefers vegan recipes." });
      assert.equal(vegan.scope, "identity");
      assert.equal(vegan.source, "tool");
      const rma = await adapter.save({ text: "Order RMA-1234.", scope: "conversation", conversationId: "c1" });
      assert.deepEqual((await adapter.list()).map((e) => e.id).sort(), [vegan.id, rma.id].sort());
      assert.deepEqual((await adapter.list({ scope: "conversation" })).map((e) => e.id), [rma.id]);
      assert.deepEqual((await adapter.list({ conversationId: "c2" })).map((e) => e.id), []);
      const updated = await adapter.update(vegan.id, { text: "Prefers vegetarian recipes.", pinned: true });
      assert.equal(updated.text, "Prefers vegetarian recipes.");
      assert.equal(updated.pinned, true);
      await adapter.delete(rma.id);
      await adapter.delete(rma.id);
      assert.deepEqual((await adapter.list()).map((e) => e.text), ["Prefers vegetarian recipes."]);
      await assert.rejects(adapter.update("missing", { text: "x" }), (e: unknown) => e instanceof MnemoError && e.reason === "NOT_FOUND");
    });

    test("a keyed save supersedes the same (scope, key): the old entry is archived, not deleted", async () => {
      const adapter = createLocalMemoryAdapter({ storage: makeStorage() });
      const first = await adapter.save({ text: "Lives in Paris.", key: "city" });
      const second = await adapter.save({ text: "Lives in Lyon.", key: "city" });
      const other = await adapter.save({ text: "Trip to Rome.", key: "city", scope: "conversation", conversationId: "c" });
      assert.deepEqual((await adapter.list({ scope: "identity" })).map((e) => e.id), [second.id]);
      const all = await adapter.list({ includeArchived: true, key: "city" });
      assert.equal(all.length, 3);
      assert.ok(all.find((e) => e.id === first.id)?.archivedAt);
      assert.equal(all.find((e) => e.id === other.id)?.archivedAt, undefined);
    });

    test("event times: a keyed save of an older fact is an earlier version; the newer supersedes until its time", async () => {
      const adapter = createLocalMemoryAdapter({ storage: makeStorage() });
      const day = 24 * 60 * 60 * 1000;
      const now = Date.now();
      const lyon = await adapter.save({ text: "Lives in Lyon.", key: "city", eventTime: now - day });
      assert.equal(lyon.eventTime, now - day);
      const paris = await adapter.save({ text: "Lives in Paris.", key: "city", eventTime: now - 3 * day });
      assert.ok(paris.archivedAt !== undefined);
      assert.equal(paris.validUntil, now - day);
      assert.deepEqual((await adapter.list({ key: "city" })).map((e) => e.id), [lyon.id]);
      const nice = await adapter.save({ text: "Lives in Nice.", key: "city" });
      assert.ok(nice.eventTime !== undefined && nice.eventTime >= now);
      const all = await adapter.list({ key: "city", includeArchived: true });
      assert.equal(all.find((e) => e.id === lyon.id)?.validUntil, nice.eventTime);
      assert.equal(all.find((e) => e.id === paris.id)?.validUntil, now - day); // already archived: unchanged
      assert.deepEqual((await adapter.list({ key: "city" })).map((e) => e.id), [nice.id]);
    });

    test("recall matches words; conversation entries rank first; archived ones never come back", async () => {
      const adapter = createLocalMemoryAdapter({ storage: makeStorage() });
      await adapter.save({ text: "Favourite tea is green tea.", key: "tea" });
      const newer = await adapter.save({ text: "Favourite tea is jasmine tea.", key: "tea" });
      const scoped = await adapter.save({ text: "In this chat, tea for two.", scope: "conversation", conversationId: "c" });
      await adapter.save({ text: "Owns a bicycle." });
      const recalled = await adapter.recall({ query: "tea", conversationId: "c" });
      assert.deepEqual(recalled.map((r) => r.entry.id), [scoped.id, newer.id]);
      assert.deepEqual(recalled.map((r) => r.rank), [1, 2]);
      assert.deepEqual(recalled[0]?.signals, ["lexical", "conversation"]);
      assert.deepEqual((await adapter.recall({ query: "tea" })).map((r) => r.entry.id), [newer.id]);
      assert.deepEqual(await adapter.recall({ query: "submarine" }), []);
    });

    test("entries outlive the adapter (a restarted app) and corrupt data reads as empty", async () => {
      const storage = makeStorage();
      const saved = await createLocalMemoryAdapter({ storage }).save({ text: "Remember me." });
      assert.deepEqual((await createLocalMemoryAdapter({ storage }).list()).map((e) => e.id), [saved.id]);
      await storage.setItem("mnemo.memories", "{not json");
      assert.deepEqual(await createLocalMemoryAdapter({ storage }).list(), []);
      await createLocalMemoryAdapter({ storage }).save({ text: "Fresh start." });
      assert.equal((await createLocalMemoryAdapter({ storage }).list()).length, 1);
    });
  });
}
