/**
 * Every mnemo.v1 service through the facade over the gRPC transport, against
 * one live server: unary calls, server streams and a client stream.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer, collect, failure } from "./support/live.js";
import {
  ConsentState,
  EventType,
  memoryStateName,
  userName,
} from "../src/index.js";

const live = withSharedServer();

function userMessage(text: string) {
  return { messageJson: JSON.stringify({ role: "user", content: text }) };
}

describe("WorkingMemoryService", () => {
  test("remembers an exchange and reads it back", async () => {
    const name = memoryStateName("svc-wm-user");
    const remembered = await live.mnemo.workingMemory.rememberExchange({
      name,
      exchange: { ask: "What is my name?", answer: "Ada." },
    });
    assert.equal(remembered.memoryState?.recent.length, 1);
    const { memoryState } = await live.mnemo.workingMemory.getMemoryState({ name });
    assert.deepEqual(
      memoryState?.recent.map((e) => [e.ask, e.answer]),
      [["What is my name?", "Ada."]],
    );
    assert.ok(memoryState?.etag);
  });

  test("clears with the current etag", async () => {
    const name = memoryStateName("svc-wm-user2", "c1");
    const { memoryState } = await live.mnemo.workingMemory.saveMemoryState({
      memoryState: { name, summary: "likes tea" },
    });
    const cleared = await live.mnemo.workingMemory.clearMemoryState({ name, etag: memoryState?.etag ?? "" });
    assert.equal(cleared.memoryState?.summary, "");
  });
});

describe("ConversationService", () => {
  test("creates a conversation, appends, lists and streams its messages", async () => {
    const { conversation } = await live.mnemo.conversations.createConversation({
      parent: userName("svc-cv-user"),
      conversationId: "c1",
    });
    assert.equal(conversation?.name, "users/svc-cv-user/conversations/c1");
    const appended = await live.mnemo.conversations.appendMessages({
      conversation: conversation?.name ?? "",
      messages: [userMessage("hello"), userMessage("again")],
    });
    assert.deepEqual(
      appended.messages.map((m) => m.position),
      [0n, 1n],
    );
    const listed = await live.mnemo.conversations.listMessages({ parent: conversation?.name ?? "" });
    assert.deepEqual(
      listed.messages.map((m) => m.text),
      ["hello", "again"],
    );
    const streamed = await collect(
      live.mnemo.conversations.streamMessages({ parent: conversation?.name ?? "" }),
    );
    assert.deepEqual(
      streamed.flatMap((r) => r.messages.map((m) => m.text)),
      ["hello", "again"],
    );
  });
});

describe("MemoryService", () => {
  test("creates a memory, gets it and recalls it over a server stream", async () => {
    const parent = userName("svc-mem-user");
    const created = await live.mnemo.memories.createMemory({
      parent,
      memoryId: "m1",
      memory: { text: "The user's favourite colour is teal" },
    });
    assert.equal(created.memory?.name, "users/svc-mem-user/memories/m1");
    const got = await live.mnemo.memories.getMemory({ name: "users/svc-mem-user/memories/m1" });
    assert.equal(got.memory?.text, "The user's favourite colour is teal");
    const recalled = await collect(live.mnemo.memories.recallMemories({ parent, query: "favourite colour" }));
    const names = recalled.map((hit) => hit.memory?.name);
    assert.ok(names.includes("users/svc-mem-user/memories/m1"), `recalled ${JSON.stringify(names)}`);
  });

  test("saves a batch all or nothing, names a refused entry, and a retry saves once", async () => {
    const parent = userName("svc-mem-batch");
    const requests = [
      { memoryId: "home-1", memory: { text: "Lives in Lyon", key: "home" } },
      { memory: { text: "Lives in Paris", key: "home" } },
      { memory: { text: "Owns a kayak", embedding: { model: "t4", values: [1, 0, 0, 0] } } },
    ];
    // No requestId given: the facade sends a fresh one for the top-level request only.
    const saved = await live.mnemo.memories.batchCreateMemories({ parent, requests });
    assert.deepEqual(
      saved.memories.map((m) => m.text),
      ["Lives in Lyon", "Lives in Paris", "Owns a kayak"],
    );
    assert.deepEqual(saved.archived, ["users/svc-mem-batch/memories/home-1"]);

    const more = [{ memory: { text: "Has a dog" } }, { memory: { text: "Has a cat" } }];
    const first = await live.mnemo.memories.batchCreateMemories({ parent, requests: more, requestId: "b-1" });
    const again = await live.mnemo.memories.batchCreateMemories({ parent, requests: more, requestId: "b-1" });
    assert.deepEqual(
      again.memories.map((m) => m.name),
      first.memories.map((m) => m.name),
    );
    assert.equal(again.changeCursor, first.changeCursor);

    const error = await failure(
      live.mnemo.memories.batchCreateMemories({
        parent,
        requests: [{ memory: { text: "fine" } }, { memory: { text: "" } }],
      }),
    );
    assert.equal(error.reason, "INVALID_FIELD");
    assert.deepEqual(
      error.fieldViolations.map((v) => v.field),
      ["requests[1].memory.text"],
    );
    const listed = await live.mnemo.memories.listMemories({ parent, includeArchived: true });
    assert.equal(listed.memories.length, 5, "the retry and the refused batch saved nothing");
  });
});

describe("GovernanceService", () => {
  test("consent, settings and events", async () => {
    const parent = userName("svc-gov-user");
    const initial = await live.mnemo.governance.getConsent({ name: `${parent}/consent` });
    assert.equal(initial.consent?.state, ConsentState.GRANTED);
    const set = await live.mnemo.governance.setConsent({
      consent: { name: `${parent}/consent`, state: ConsentState.WITHDRAWN, policyVersion: "v2" },
    });
    assert.equal(set.consent?.state, ConsentState.WITHDRAWN);
    const settings = await live.mnemo.governance.getMemorySettings({ name: `${parent}/memorySettings` });
    assert.equal(settings.memorySettings?.enabled, true);
    const events = await live.mnemo.governance.listEvents({ parent });
    assert.deepEqual(
      events.events.map((e) => e.type),
      [EventType.MEMORY_CONSENT_CHANGED],
    );
  });

  test("exports over a server stream, erases, imports over a client stream", async () => {
    const parent = userName("svc-gov-export");
    const name = memoryStateName("svc-gov-export");
    await live.mnemo.workingMemory.rememberExchange({ name, exchange: { ask: "hi", answer: "hello" } });
    const exported = await collect(live.mnemo.governance.exportUserData({ parent }));
    const records = exported.flatMap((r) => (r.record === undefined ? [] : [r.record]));
    assert.ok(records.some((r) => r.record.case === "memoryState"), "the working memory is exported");

    await live.mnemo.governance.deleteUserData({ parent });
    const erased = await live.mnemo.workingMemory.getMemoryState({ name });
    assert.equal(erased.memoryState?.recent.length, 0);

    const imported = await live.mnemo.governance.importUserData(
      (async function* () {
        for (const record of records) yield { parent, record };
      })(),
    );
    assert.ok(
      Object.values(imported.loaded).some((count) => count > 0n),
      `loaded ${Object.entries(imported.loaded).join(" ")}`,
    );
    const restored = await live.mnemo.workingMemory.getMemoryState({ name });
    assert.deepEqual(
      restored.memoryState?.recent.map((e) => e.ask),
      ["hi"],
    );
  });
});

describe("SyncService", () => {
  test("lists the change a write made, at the cursor the write reported", async () => {
    const parent = userName("svc-sync-user");
    const saved = await live.mnemo.workingMemory.rememberExchange({
      name: memoryStateName("svc-sync-user"),
      exchange: { ask: "a", answer: "b" },
    });
    const { changes, latestCursor } = await live.mnemo.sync.listChanges({ parent, afterCursor: 0n });
    const last = changes.at(-1);
    assert.equal(last?.resourceName, "users/svc-sync-user/memoryState");
    assert.equal(last?.cursor, saved.changeCursor);
    assert.equal(latestCursor, saved.changeCursor);
  });
});
