/**
 * The token option against a server started with --auth jwt (HS256), and the
 * RetryInfo of its per-user rate limit (a burst of RATE_BURST calls, then one
 * call per 100 s: no test here comes near it but the one that floods).
 */
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
const RATE_BURST = 20;
let server: MnemoTestServer;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), "mnemo-ts-auth-"));
  const rateLimit = ["--rate-limit-per-second", "0.01", "--rate-limit-burst", String(RATE_BURST)];
  server = new MnemoTestServer({ args: [...keys.serverArgs(dir), ...rateLimit] }, dir);
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

test("a user over the rate limit: RESOURCE_EXHAUSTED RATE_LIMITED with retryAfterMs", async () => {
  const mnemo = createMnemoClient({ baseUrl: server.baseUrl, token: keys.token("erin") });
  try {
    const name = memoryStateName("erin");
    for (let call = 0; call < RATE_BURST; call++) await mnemo.workingMemory.getMemoryState({ name });
    const error = await failure(mnemo.workingMemory.getMemoryState({ name }));
    assert.equal(error.code, Code.ResourceExhausted);
    assert.equal(error.reason, "RATE_LIMITED");
    assert.ok(
      error.retryAfterMs !== undefined && error.retryAfterMs > 1000,
      `retryAfterMs ${error.retryAfterMs}`,
    );
  } finally {
    mnemo.close();
  }
});
