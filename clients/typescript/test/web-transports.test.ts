/**
 * The fetch transports ("grpc-web", "connect") against the server's web port
 * (--web-listen), from Node 20's fetch: unary calls, a server stream, MnemoError
 * details and deadlines, through both entry points (index and web). (Client
 * streams do not work over fetch.)
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer, collect, closeEndsAWatch, failure } from "./support/live.js";
import {
  Code,
  conversationName,
  createMnemoClient,
  memoryStateName,
  userName,
  type MnemoClient,
} from "../src/index.js";
import { createMnemoClient as createWebMnemoClient } from "../src/web.js";

const live = withSharedServer();

const clients: Record<string, () => MnemoClient> = {
  "grpc-web": () => createMnemoClient({ baseUrl: live.server.webBaseUrl, transport: "grpc-web" }),
  connect: () => createMnemoClient({ baseUrl: live.server.webBaseUrl, transport: "connect" }),
  "grpc-web from the browser entry point": () => createWebMnemoClient({ baseUrl: live.server.webBaseUrl }),
};

for (const [label, make] of Object.entries(clients)) {
  const user = `web-${label.replace(/[^a-z]+/g, "-")}`;

  describe(label, () => {
    test("unary calls write and read working memory", async () => {
      const mnemo = make();
      const name = memoryStateName(user);
      await mnemo.workingMemory.rememberExchange({ name, exchange: { ask: "over fetch?", answer: "yes" } });
      const { memoryState } = await mnemo.workingMemory.getMemoryState({ name });
      assert.deepEqual(
        memoryState?.recent.map((e) => e.ask),
        ["over fetch?"],
      );
    });

    test("a server stream delivers every message", async () => {
      const mnemo = make();
      const { conversation } = await mnemo.conversations.createConversation({ parent: userName(user) });
      const parent = conversation?.name ?? "";
      await mnemo.conversations.appendMessages({
        conversation: parent,
        messages: ["one", "two", "three"].map((text) => ({
          messageJson: JSON.stringify({ role: "user", content: text }),
        })),
      });
      const streamed = await collect(mnemo.conversations.streamMessages({ parent, batchSize: 1 }));
      assert.deepEqual(
        streamed.flatMap((r) => r.messages.map((m) => m.text)),
        ["one", "two", "three"],
      );
    });

    test("close() ends a watch in flight: its next read fails with CANCELED", async () => {
      await closeEndsAWatch(make(), `${user}-close`);
    });

    test("an error carries its code, reason and field violations", async () => {
      const mnemo = make();
      const error = await failure(
        mnemo.workingMemory.getMemoryState({ name: conversationName(user, "c1") }),
      );
      assert.equal(error.code, Code.InvalidArgument);
      assert.equal(error.reason, "INVALID_NAME");
      assert.deepEqual(
        error.fieldViolations.map((v) => v.field),
        ["name"],
      );
    });

    test("a stream's deadline ends it with DEADLINE_EXCEEDED", async () => {
      const mnemo = make();
      const error = await failure(
        collect(mnemo.sync.watchChanges({ parent: userName(user) }, { timeoutMs: 500 })),
      );
      assert.equal(error.code, Code.DeadlineExceeded);
    });
  });
}

test('the browser entry point refuses transport "grpc"', () => {
  assert.throws(
    () => createWebMnemoClient({ baseUrl: "http://127.0.0.1:1", transport: "grpc" as "connect" }),
    TypeError,
  );
});
