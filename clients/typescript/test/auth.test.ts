/** The token option against a server started with --auth jwt (HS256). */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MnemoTestServer } from "./support/server.js";
import { Hs256Keys } from "./support/tokens.js";
import { failure } from "./support/live.js";
import { Code, createMnemoClient, memoryStateName } from "../src/index.js";

const keys = new Hs256Keys();
let server: MnemoTestServer;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), "mnemo-ts-auth-"));
  server = new MnemoTestServer({ args: keys.serverArgs(dir) }, dir);
  await server.start();
});

after(async () => {
  await server?.close();
});

test("no token: UNAUTHENTICATED", async () => {
  const mnemo = createMnemoClient({ baseUrl: server.baseUrl });
  try {
    const error = await failure(mnemo.workingMemory.getMemoryState({ name: memoryStateName("alice") }));
    assert.equal(error.code, Code.Unauthenticated);
  } finally {
    mnemo.close();
  }
});

test("a token string is sent with every call and names the caller", async () => {
  const mnemo = createMnemoClient({ baseUrl: server.baseUrl, token: keys.token("alice") });
  try {
    const { memoryState } = await mnemo.workingMemory.rememberExchange({
      name: memoryStateName("alice"),
      exchange: { ask: "a", answer: "b" },
    });
    assert.equal(memoryState?.recent.length, 1);
    const error = await failure(mnemo.workingMemory.getMemoryState({ name: memoryStateName("bob") }));
    assert.equal(error.code, Code.NotFound, "another user's data does not exist for alice");
  } finally {
    mnemo.close();
  }
});

test("a token function is asked before each call", async () => {
  let asked = 0;
  const mnemo = createMnemoClient({
    baseUrl: server.baseUrl,
    token: async () => {
      asked += 1;
      return keys.token("carol");
    },
  });
  try {
    await mnemo.workingMemory.getMemoryState({ name: memoryStateName("carol") });
    await mnemo.workingMemory.getMemoryState({ name: memoryStateName("carol") });
    assert.equal(asked, 2);
  } finally {
    mnemo.close();
  }
});

test("an expired token: UNAUTHENTICATED", async () => {
  const mnemo = createMnemoClient({ baseUrl: server.baseUrl, token: keys.token("dave", { expiresIn: -60 }) });
  try {
    const error = await failure(mnemo.workingMemory.getMemoryState({ name: memoryStateName("dave") }));
    assert.equal(error.code, Code.Unauthenticated);
  } finally {
    mnemo.close();
  }
});
