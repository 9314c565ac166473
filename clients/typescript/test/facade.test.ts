/**
 * The facade's contract over the gRPC transport: MnemoError (code, reason,
 * metadata, field violations) for unary calls and streams, deadlines, and
 * automatic request ids, on the shared server.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer, collect, closeEndsAWatch, failure } from "./support/live.js";
import { attemptRecorder } from "./support/recorder.js";
import {
  Code,
  MnemoError,
  RememberExchangeRequestSchema,
  create,
  conversationName,
  createMnemoClient,
  memoryStateName,
  userName,
} from "../src/index.js";

const live = withSharedServer();

/** The MnemoError `promise` rejects with (fails the test if it resolves or throws anything else). */

describe("MnemoError", () => {
  test("carries the code, ErrorInfo reason and domain, and BadRequest field violations", async () => {
    const error = await failure(
      live.mnemo.workingMemory.getMemoryState({ name: conversationName("fac-u1", "c1") }),
    );
    assert.equal(error.code, Code.InvalidArgument);
    assert.equal(error.codeName, "INVALID_ARGUMENT");
    assert.equal(error.reason, "INVALID_NAME");
    assert.equal(error.domain, "mnemo.v1");
    assert.deepEqual(
      error.fieldViolations.map((v) => v.field),
      ["name"],
    );
    assert.ok(error.fieldViolations[0]?.description, "the violation says what is wrong");
    assert.match(error.message, /^INVALID_ARGUMENT \[INVALID_NAME\]: /);
  });

  test("carries the ErrorInfo metadata (POSITION_MISMATCH names the next position)", async () => {
    const { conversation } = await live.mnemo.conversations.createConversation({ parent: userName("fac-u2") });
    const error = await failure(
      live.mnemo.conversations.appendMessages({
        conversation: conversation?.name ?? "",
        messages: [{ messageJson: JSON.stringify({ role: "user", content: "hi" }) }],
        expectedPosition: 5n,
      }),
    );
    assert.equal(error.code, Code.Aborted);
    assert.equal(error.reason, "POSITION_MISMATCH");
    assert.equal(error.metadata["next_position"], "0");
    assert.ok(error.is("POSITION_MISMATCH", Code.Aborted));
  });

  test("a server stream fails with a MnemoError too", async () => {
    const error = await failure(
      collect(live.mnemo.conversations.streamMessages({ parent: conversationName("fac-u4", "missing") })),
    );
    assert.equal(error.code, Code.NotFound);
    assert.ok(error.reason, "NOT_FOUND carries a reason");
  });

  test("an id with a slash is refused before anything is sent", () => {
    assert.throws(
      () => memoryStateName("u1/conversations/c2"),
      (error: unknown) => error instanceof MnemoError && error.reason === "INVALID_NAME",
    );
  });
});

describe("deadlines", () => {
  // A watch never ends by itself, so only its deadline can end it. (Unary
  // calls against a hung server: outages.test.ts.)
  test("a call's own timeoutMs ends a stream with DEADLINE_EXCEEDED", async () => {
    const error = await failure(
      collect(live.mnemo.sync.watchChanges({ parent: userName("fac-d1") }, { timeoutMs: 500 })),
    );
    assert.equal(error.code, Code.DeadlineExceeded);
    assert.equal(error.reason, "", "the deadline expired on the client: no ErrorInfo");
  });

  test("the client's timeoutMs is every call's default deadline", async () => {
    const quick = createMnemoClient({ baseUrl: live.server.baseUrl, timeoutMs: 500 });
    try {
      const error = await failure(collect(quick.sync.watchChanges({ parent: userName("fac-d2") })));
      assert.equal(error.code, Code.DeadlineExceeded);
    } finally {
      quick.close();
    }
  });
});

describe("request ids", () => {
  test("a write without one gets a fresh uuid per call; one the caller set is kept", async () => {
    const { attempts, interceptor } = attemptRecorder();
    const client = createMnemoClient({ baseUrl: live.server.baseUrl, interceptors: [interceptor] });
    try {
      const name = memoryStateName("fac-r1");
      await client.workingMemory.rememberExchange({ name, exchange: { ask: "1", answer: "1" } });
      await client.workingMemory.rememberExchange({ name, exchange: { ask: "2", answer: "2" } });
      await client.workingMemory.rememberExchange({
        name,
        exchange: { ask: "3", answer: "3" },
        requestId: "mine",
      });
      await client.workingMemory.getMemoryState({ name });
      const [first, second, third, read] = attempts.map((a) => a.requestId);
      assert.match(first ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.notEqual(first, second);
      assert.equal(third, "mine");
      assert.equal(read, undefined, "a read has no request id");
    } finally {
      client.close();
    }
  });

  test("a message object sent twice gets two ids and is left as it was", async () => {
    const { attempts, interceptor } = attemptRecorder();
    const client = createMnemoClient({ baseUrl: live.server.baseUrl, interceptors: [interceptor] });
    try {
      const request = create(RememberExchangeRequestSchema, {
        name: memoryStateName("fac-r4"),
        exchange: { ask: "same object", answer: "twice" },
      });
      await client.workingMemory.rememberExchange(request);
      await client.workingMemory.rememberExchange(request);
      assert.equal(request.requestId, "", "the caller's message is not changed");
      const [first, second] = attempts.map((a) => a.requestId);
      assert.ok(first && second && first !== second, `ids ${first} and ${second}`);
    } finally {
      client.close();
    }
  });

  test("autoRequestIds: false sends none", async () => {
    const { attempts, interceptor } = attemptRecorder();
    const client = createMnemoClient({
      baseUrl: live.server.baseUrl,
      autoRequestIds: false,
      interceptors: [interceptor],
    });
    try {
      await client.workingMemory.rememberExchange({
        name: memoryStateName("fac-r2"),
        exchange: { ask: "a", answer: "b" },
      });
      assert.equal(attempts[0]?.requestId, "");
    } finally {
      client.close();
    }
  });

  test("a write sent twice with the same request id is applied once", async () => {
    const name = memoryStateName("fac-r3");
    const request = { name, exchange: { ask: "once", answer: "yes" }, requestId: "r3-write-1" };
    const first = await live.mnemo.workingMemory.rememberExchange(request);
    const replay = await live.mnemo.workingMemory.rememberExchange(request);
    assert.equal(replay.memoryState?.etag, first.memoryState?.etag);
    const { memoryState } = await live.mnemo.workingMemory.getMemoryState({ name });
    assert.deepEqual(
      memoryState?.recent.map((e) => e.ask),
      ["once"],
    );
  });
});

describe("close", () => {
  test("ends the connection; a later call opens a new one", async () => {
    const client = createMnemoClient({ baseUrl: live.server.baseUrl });
    const name = memoryStateName("fac-close");
    await client.workingMemory.getMemoryState({ name });
    client.close();
    client.close();
    const { memoryState } = await client.workingMemory.getMemoryState({ name });
    assert.equal(memoryState?.name, "users/fac-close/memoryState");
    client.close();
  });

  test("ends a watch in flight: its next read fails with CANCELED", async () => {
    await closeEndsAWatch(createMnemoClient({ baseUrl: live.server.baseUrl }), "fac-close-watch");
  });
});

describe("the server's address", () => {
  test("is taken as host:port, http://host:port or with a trailing slash, as every client takes it", async () => {
    const url = new URL(live.server.baseUrl);
    for (const form of [url.host, `http://${url.host}`, `http://${url.host}/`]) {
      const client = createMnemoClient({ baseUrl: form });
      try {
        const { memory } = await client.memories.createMemory({
          parent: userName("fac-addr"),
          memory: { text: `reached at ${form}` },
        });
        assert.equal(memory?.text, `reached at ${form}`);
      } finally {
        client.close();
      }
    }
  });

  test("with a path is refused, saying which forms are taken", () => {
    assert.throws(
      () => createMnemoClient({ baseUrl: "http://127.0.0.1:50051/mnemo.v1" }),
      /give the server's address, as host:port or http:\/\/host:port/,
    );
  });
});
