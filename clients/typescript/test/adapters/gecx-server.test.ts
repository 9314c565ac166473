/** gecx-chat's server memory adapter over a live Mnemo server. */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer } from "../support/live.js";
import { Code, ConsentState, createMnemoClient, memoryName, MnemoError } from "../../src/index.js";
import { createMnemoServerMemoryAdapter } from "../../src/adapters/index.js";
import { FAIL_FAST } from "./support.js";

const live = withSharedServer();
const DAY = 24 * 60 * 60 * 1000;

describe("gecx-chat server memory adapter", () => {
  test("save stores an identity-wide entry by default, or one scoped to a conversation", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-save" });
    const vegan = await remote.save({ text: "Prefers vegan recipes." });
    assert.equal(vegan.scope, "identity");
    assert.equal(vegan.source, "tool");
    assert.ok(vegan.createdAt > 0);
    const rma = await remote.save({
      text: "This conversation is about order RMA-1234.",
      scope: "conversation",
      conversationId: "support chat",
      metadata: { origin: "tool" },
      source: "user",
      id: "rma-note",
    });
    assert.equal(rma.id, "rma-note");
    assert.equal(rma.conversationId, "support chat");
    assert.equal(rma.source, "user");
    const stored = await live.mnemo.memories.getMemory({ name: memoryName("x-save", "rma-note") });
    assert.equal(stored.memory?.text, "This conversation is about order RMA-1234.");
    assert.deepEqual(stored.memory?.metadata, { origin: "tool" });
  });

  test("a keyed save archives the older entry of the same (scope, key); list shows the newest", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-key" });
    const paris = await remote.save({ text: "Lives in Paris.", key: "city" });
    const lyon = await remote.save({ text: "Lives in Lyon.", key: "city" });
    assert.deepEqual((await remote.list()).map((e) => e.id), [lyon.id]);
    const all = await remote.list({ includeArchived: true });
    assert.deepEqual(all.map((e) => e.id).sort(), [paris.id, lyon.id].sort());
    assert.ok((all.find((e) => e.id === paris.id)?.archivedAt ?? 0) > 0);
    assert.deepEqual((await remote.list({ key: "city" })).map((e) => e.text), ["Lives in Lyon."]);
  });

  test("saveResult tells what a save did (created, historical, duplicate); entries carry their event time", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-outcome" });
    const lastWeek = Date.now() - 7 * DAY;
    const lastYear = Date.now() - 365 * DAY;
    const lyon = await remote.saveResult({ text: "Lives in Lyon.", key: "city", eventTime: lastWeek });
    assert.equal(lyon.outcome, "created");
    assert.equal(lyon.entry.eventTime, lastWeek);
    assert.equal(lyon.entry.validUntil, undefined);
    assert.ok(lyon.entry.createdAt > lastWeek);
    // A late save of an older fact of the key: an earlier version, valid until the current one.
    const paris = await remote.saveResult({ text: "Lives in Paris.", key: "city", eventTime: lastYear });
    assert.equal(paris.outcome, "historical");
    assert.ok(paris.entry.archivedAt !== undefined);
    assert.deepEqual([paris.entry.eventTime, paris.entry.validUntil], [lastYear, lastWeek]);
    assert.deepEqual((await remote.list({ key: "city" })).map((e) => e.id), [lyon.entry.id]);
    // The same fact again (normalised): nothing stored, the live entry under its own id.
    const again = await remote.saveResult({ text: "lives in  LYON", key: "city", id: "x-chosen" });
    assert.equal(again.outcome, "duplicate");
    assert.deepEqual([again.entry.id, again.entry.text], [lyon.entry.id, "Lives in Lyon."]);
    await assert.rejects(
      live.mnemo.memories.getMemory({ name: memoryName("x-outcome", "x-chosen") }),
      (e: unknown) => e instanceof MnemoError && e.code === Code.NotFound,
    );
    const vegan = await remote.save({ text: "Is vegan." });
    assert.equal((await remote.save({ text: "is VEGAN!" })).id, vegan.id);
    assert.equal((await remote.list({ includeArchived: true })).length, 3);
    await assert.rejects(
      remote.save({ text: "Said tomorrow.", eventTime: Date.now() + 2 * DAY }),
      (e: unknown) =>
        e instanceof MnemoError && e.code === Code.InvalidArgument && e.fieldViolations.some((v) => v.field === "memory.event_time"),
    );
  });

  test("update changes text and pinned; delete removes (twice is fine)", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-update" });
    const entry = await remote.save({ text: "Has a cat." });
    const updated = await remote.update(entry.id, { text: "Has two cats.", pinned: true });
    assert.equal(updated.text, "Has two cats.");
    assert.equal(updated.pinned, true);
    const repinned = await remote.update(entry.id, { pinned: false });
    assert.equal(repinned.text, "Has two cats.");
    await remote.delete(entry.id);
    await remote.delete(entry.id);
    assert.deepEqual(await remote.list(), []);
  });

  test("list filters by scope and conversation", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-list" });
    const identity = await remote.save({ text: "Speaks French." });
    const inChat = await remote.save({ text: "Wants a refund.", scope: "conversation", conversationId: "c1" });
    await remote.save({ text: "Asked about shoes.", scope: "conversation", conversationId: "c2" });
    assert.deepEqual((await remote.list({ scope: "identity" })).map((e) => e.id), [identity.id]);
    assert.deepEqual((await remote.list({ conversationId: "c1" })).map((e) => e.id), [inChat.id]);
    assert.equal((await remote.list()).length, 3);
    assert.equal((await remote.list({ limit: 2 })).length, 2);
  });

  test("recall finds entries by their words, the conversation's own first", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-recall" });
    const identity = await remote.save({ text: "Allergic to peanuts." });
    const scoped = await remote.save({ text: "Ordered a peanuts-free cake today.", scope: "conversation", conversationId: "c" });
    await remote.save({ text: "Likes jazz." });
    const recalled = await remote.recall({ query: "peanuts", conversationId: "c" });
    assert.deepEqual(recalled.map((r) => r.entry.id), [scoped.id, identity.id]);
    assert.deepEqual(recalled.map((r) => r.rank), [1, 2]);
    assert.ok(recalled[0]?.signals.includes("conversation"));
    assert.deepEqual((await remote.recall({ query: "peanuts", scope: "identity" })).map((r) => r.entry.id), [identity.id]);
    // minScore is the server's minimum relevance for this recall (this server
    // recalls by words: it keeps every match unless asked).
    assert.ok(recalled.every((r) => r.score > 0 && r.score < 0.99), `scores ${recalled.map((r) => r.score)}`);
    assert.deepEqual(await remote.recall({ query: "peanuts", conversationId: "c", minScore: 0.99 }), []);
    assert.equal((await remote.recall({ query: "peanuts", conversationId: "c", minScore: 0 })).length, 2);
  });

  test("writes refused by governance reject with the gecx-chat code as the reason", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-consent" });
    const kept = await remote.save({ text: "Before withdrawal." });
    await live.mnemo.governance.setConsent({
      consent: { name: "users/x-consent/consent", state: ConsentState.WITHDRAWN, policyVersion: "v1" },
    });
    await assert.rejects(remote.save({ text: "After withdrawal." }), (e: unknown) => {
      assert.ok(e instanceof MnemoError);
      assert.equal(e.reason, "MEMORY_CONSENT_WITHDRAWN");
      return true;
    });
    await assert.rejects(remote.update(kept.id, { text: "x" }), (e: unknown) => e instanceof MnemoError && e.reason === "MEMORY_CONSENT_WITHDRAWN");
    // Reads answer nothing rather than fail.
    assert.deepEqual(await remote.recall({ query: "withdrawal" }), []);
  });

  test("writes made in a temporary conversation are refused whatever their scope", async () => {
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "x-temporary" });
    await live.mnemo.conversations.createConversation({
      parent: "users/x-temporary",
      conversationId: "secret",
      conversation: { temporary: true },
    });
    const kept = await remote.save({ text: "Allergic to nuts." });
    const temporary = (e: unknown) => e instanceof MnemoError && e.reason === "TEMPORARY_CONVERSATION";
    await assert.rejects(remote.save({ text: "Works nights.", originConversationId: "secret" }), temporary);
    await assert.rejects(remote.update(kept.id, { text: "x", originConversationId: "secret" }), temporary);
    await assert.rejects(remote.delete(kept.id, { originConversationId: "secret" }), temporary);
    assert.deepEqual((await remote.list()).map((e) => e.text), ["Allergic to nuts."]);
    // From an ordinary conversation the same writes go through.
    await remote.update(kept.id, { text: "Allergic to cats.", originConversationId: "open" });
    const saved = await remote.save({ text: "Works nights.", originConversationId: "open" });
    await remote.delete(saved.id, { originConversationId: "open" });
    assert.deepEqual((await remote.list()).map((e) => e.text), ["Allergic to cats."]);
  });

  test("reads never reject: an unreachable server reads as nothing, and the error is reported", async () => {
    const down = createMnemoClient({ baseUrl: "http://127.0.0.1:1", ...FAIL_FAST });
    const errors: string[] = [];
    try {
      const remote = createMnemoServerMemoryAdapter(down, { userId: "x-down", onReadError: (_e, op) => errors.push(op) });
      assert.deepEqual(await remote.list(), []);
      assert.deepEqual(await remote.recall({ query: "anything" }), []);
      assert.deepEqual(errors, ["list", "recall"]);
      await assert.rejects(remote.fetchList(), MnemoError);
      await assert.rejects(remote.save({ text: "x" }), MnemoError);
    } finally {
      down.close();
    }
  });
});
