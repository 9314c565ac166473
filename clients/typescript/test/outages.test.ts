/**
 * The facade when the server is hung (SIGSTOP) or stopped: deadlines of unary
 * calls, and retries of UNAVAILABLE until the server is back on the same port.
 * The tests of the "stopped" suite run in order: the last one starts it again.
 */
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { withOwnServer, failure } from "./support/live.js";
import { attemptRecorder } from "./support/recorder.js";
import {
  Code,
  createMnemoClient,
  memoryStateName,
} from "../src/index.js";

const live = withOwnServer();

/** Runs `body` while the server is suspended: calls reach its port but get no answer. */
async function whileHung<T>(body: () => Promise<T>): Promise<T> {
  live.server.suspend();
  try {
    return await body();
  } finally {
    live.server.resume();
  }
}

describe("a hung server", () => {
  test("a call's own timeoutMs ends a unary call with DEADLINE_EXCEEDED", async () => {
    await live.mnemo.workingMemory.getMemoryState({ name: memoryStateName("hung") });
    const error = await whileHung(() =>
      failure(live.mnemo.workingMemory.getMemoryState({ name: memoryStateName("hung") }, { timeoutMs: 300 })),
    );
    assert.equal(error.code, Code.DeadlineExceeded);
    assert.equal(error.reason, "");
  });

  test("the client's timeoutMs is the default deadline, on a new connection too", async () => {
    const quick = createMnemoClient({ baseUrl: live.server.baseUrl, timeoutMs: 300 });
    try {
      const error = await whileHung(() =>
        failure(quick.workingMemory.getMemoryState({ name: memoryStateName("hung") })),
      );
      assert.equal(error.code, Code.DeadlineExceeded);
    } finally {
      quick.close();
    }
  });
});

describe("a stopped server", () => {
  before(async () => {
    await live.mnemo.workingMemory.getMemoryState({ name: memoryStateName("retried") });
    assert.equal(await live.server.stop(), 0, "a clean stop");
  });

  test("without retries: UNAVAILABLE", async () => {
    const once = createMnemoClient({ baseUrl: live.server.baseUrl, retry: { maxAttempts: 1 } });
    try {
      const error = await failure(once.workingMemory.getMemoryState({ name: memoryStateName("x") }));
      assert.equal(error.code, Code.Unavailable);
    } finally {
      once.close();
    }
  });

  test("the call's deadline bounds its retries: DEADLINE_EXCEEDED", async () => {
    const patient = createMnemoClient({
      baseUrl: live.server.baseUrl,
      timeoutMs: 500,
      retry: { maxAttempts: 10_000, initialBackoffMs: 50, maxBackoffMs: 50 },
    });
    try {
      const error = await failure(patient.workingMemory.getMemoryState({ name: memoryStateName("x") }));
      assert.equal(error.code, Code.DeadlineExceeded);
    } finally {
      patient.close();
    }
  });

  test("a write retried until the server is back is applied once, under one request id", async () => {
    const { attempts, interceptor } = attemptRecorder();
    const patient = createMnemoClient({
      baseUrl: live.server.baseUrl,
      timeoutMs: 120_000,
      retry: { maxAttempts: 1_000, initialBackoffMs: 100, maxBackoffMs: 300 },
      interceptors: [interceptor],
    });
    try {
      const name = memoryStateName("retried");
      const write = patient.workingMemory.rememberExchange({ name, exchange: { ask: "q", answer: "a" } });
      await live.server.start();
      const written = await write;
      assert.equal(written.memoryState?.recent.length, 1);
      const writes = attempts.filter((a) => a.method === "RememberExchange");
      assert.ok(writes.length > 1, `retried (${writes.length} attempts)`);
      assert.equal(new Set(writes.map((a) => a.requestId)).size, 1, "one request id for every attempt");
      const { memoryState } = await patient.workingMemory.getMemoryState({ name });
      assert.deepEqual(
        memoryState?.recent.map((e) => e.ask),
        ["q"],
      );
    } finally {
      patient.close();
    }
  });
});
