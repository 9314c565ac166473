/**
 * Every mnemo.v1 service through the facade over the gRPC transport, against
 * one live server: unary calls, server streams and a client stream.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { sharedServer, type TestServer } from "./support/server.js";
import {
  ConsentState,
  EventType,
  createMnemoClient,
  memoryStateName,
  userName,
  type MnemoClient,
} from "../src/index.js";

let server: TestServer;
let mnemo: MnemoClient;

before(async () => {
  server = await sharedServer();
  mnemo = createMnemoClient({ baseUrl: server.baseUrl });
});

after(async () => {
  mnemo?.close();
  await server?.close();
});

function userMessage(text: string) {
  return { messageJson: JSON.stringify({ role: "user", content: text }) };
}

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

describe("WorkingMemoryService", () => {
  test("remembers an exchange and reads it back", async () => {
    const name = memoryStateName("svc-wm-user");
    const remembered = await mnemo.workingMemory.rememberExchange({
      name,
      exchange: { ask: "What is my name?", answer: "Ada." },
    });
    assert.equal(remembered.memoryState?.recent.length, 1);
    const { memoryState } = await mnemo.workingMemory.getMemoryState({ name });
    assert.deepEqual(
      memoryState?.recent.map((e) => [e.ask, e.answer]),
      [["What is my name?", "Ada."]],
    );
    assert.ok(memoryState?.etag);
  });

  test("clears with the current etag", async () => {
    const name = memoryStateName("svc-wm-user2", "c1");
    const { memoryState } = await mnemo.workingMemory.saveMemoryState({
      memoryState: { name, summary: "likes tea" },
    });
    const cleared = await mnemo.workingMemory.clearMemoryState({ name, etag: memoryState?.etag ?? "" });
    assert.equal(cleared.memoryState?.summary, "");
  });
});

describe("ConversationService", () => {
  test("creates a conversation, appends, lists and streams its messages", async () => {
    const { conversation } = await mnemo.conversations.createConversation({
      parent: userName("svc-cv-user"),
      conversationId: "c1",
    });
    assert.equal(conversation?.name, "users/svc-cv-user/conversations/c1");
    const appended = await mnemo.conversations.appendMessages({
      conversation: conversation?.name ?? "",
      messages: [userMessage("hello"), userMessage("again")],
    });
    assert.deepEqual(
      appended.messages.map((m) => m.position),
      [0n, 1n],
    );
    const listed = await mnemo.conversations.listMessages({ parent: conversation?.name ?? "" });
    assert.deepEqual(
      listed.messages.map((m) => m.text),
      ["hello", "again"],
    );
    const streamed = await collect(
      mnemo.conversations.streamMessages({ parent: conversation?.name ?? "" }),
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
    const created = await mnemo.memories.createMemory({
      parent,
      memoryId: "m1",
      memory: { text: "The user's favourite colour is teal" },
    });
    assert.equal(created.memory?.name, "users/svc-mem-user/memories/m1");
    const got = await mnemo.memories.getMemory({ name: "users/svc-mem-user/memories/m1" });
    assert.equal(got.memory?.text, "The user's favourite colour is teal");
    const recalled = await collect(mnemo.memories.recallMemories({ parent, query: "favourite colour" }));
    const names = recalled.map((hit) => hit.memory?.name);
    assert.ok(names.includes("users/svc-mem-user/memories/m1"), `recalled ${JSON.stringify(names)}`);
  });
});

describe("GovernanceService", () => {
  test("consent, settings and events", async () => {
    const parent = userName("svc-gov-user");
    const initial = await mnemo.governance.getConsent({ name: `${parent}/consent` });
    assert.equal(initial.consent?.state, ConsentState.GRANTED);
    const set = await mnemo.governance.setConsent({
      consent: { name: `${parent}/consent`, state: ConsentState.WITHDRAWN, policyVersion: "v2" },
    });
    assert.equal(set.consent?.state, ConsentState.WITHDRAWN);
    const settings = await mnemo.governance.getMemorySettings({ name: `${parent}/memorySettings` });
    assert.equal(settings.memorySettings?.enabled, true);
    const events = await mnemo.governance.listEvents({ parent });
    assert.deepEqual(
      events.events.map((e) => e.type),
      [EventType.MEMORY_CONSENT_CHANGED],
    );
  });

  test("exports over a server stream, erases, imports over a client stream", async () => {
    const parent = userName("svc-gov-export");
    const name = memoryStateName("svc-gov-export");
    await mnemo.workingMemory.rememberExchange({ name, exchange: { ask: "hi", answer: "hello" } });
    const exported = await collect(mnemo.governance.exportUserData({ parent }));
    const records = exported.flatMap((r) => (r.record === undefined ? [] : [r.record]));
    assert.ok(records.some((r) => r.record.case === "memoryState"), "the working memory is exported");

    await mnemo.governance.deleteUserData({ parent });
    const erased = await mnemo.workingMemory.getMemoryState({ name });
    assert.equal(erased.memoryState?.recent.length, 0);

    const imported = await mnemo.governance.importUserData(
      (async function* () {
        for (const record of records) yield { parent, record };
      })(),
    );
    assert.ok(
      Object.values(imported.loaded).some((count) => count > 0n),
      `loaded ${Object.entries(imported.loaded).join(" ")}`,
    );
    const restored = await mnemo.workingMemory.getMemoryState({ name });
    assert.deepEqual(
      restored.memoryState?.recent.map((e) => e.ask),
      ["hi"],
    );
  });
});

describe("SyncService", () => {
  test("lists the change a write made, at the cursor the write reported", async () => {
    const parent = userName("svc-sync-user");
    const saved = await mnemo.workingMemory.rememberExchange({
      name: memoryStateName("svc-sync-user"),
      exchange: { ask: "a", answer: "b" },
    });
    const { changes, latestCursor } = await mnemo.sync.listChanges({ parent, afterCursor: 0n });
    const last = changes.at(-1);
    assert.equal(last?.resourceName, "users/svc-sync-user/memoryState");
    assert.equal(last?.cursor, saved.changeCursor);
    assert.equal(latestCursor, saved.changeCursor);
  });
});
