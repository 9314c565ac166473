/** Anvia's MemoryStore over a live Mnemo server: every method, the save policies, compaction. */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer } from "../support/live.js";
import { conversationName, createMnemoClient, MnemoError } from "../../src/index.js";
import { MnemoMemoryStore, type anvia } from "../../src/adapters/index.js";
import { loseResponses, requestRecorder } from "./support.js";

const live = withSharedServer();

const user = (text: string): anvia.Message => ({ role: "user", content: text });
const assistant = (text: string): anvia.Message => ({ role: "assistant", content: [{ type: "text", text }] });
const toolCall: anvia.Message = {
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: "c1", toolName: "weather", input: { city: "Paris" } }],
  metadata: { model: "m1" },
};
const toolResult: anvia.Message = {
  role: "tool",
  content: [{ type: "tool-result", toolCallId: "c1", toolName: "weather", output: "sunny" }],
};

/**
 * One Anvia run as its agent saves it under each policy (Anvia's "Save Policy"
 * table): the prompt, a model turn that calls a tool, the tool's result, a
 * final answer. Turn 1 is the tool turn, turn 2 the final one.
 */
async function runAnvia(
  store: MnemoMemoryStore,
  scope: anvia.MemoryScope,
  runId: string,
  policy: anvia.MemorySavePolicy,
  fail = false,
): Promise<void> {
  const turns: anvia.Message[][] = [[user("What is the weather?"), toolCall, toolResult], [assistant("Sunny.")]];
  const done: anvia.Message[] = [];
  for (const [index, messages] of turns.entries()) {
    const turn = index + 1;
    if (fail && turn === 2) {
      await store.recordError({ scope, runId, error: new Error("model timed out"), messages: done });
      return;
    }
    for (const message of messages) {
      done.push(message);
      if (policy === "message") await store.append({ scope, runId, turn, messages: [message] });
    }
    if (policy === "turn") await store.append({ scope, runId, turn, messages });
  }
  if (policy === "run") await store.append({ scope, runId, turn: turns.length, messages: done });
}

/** The run as stored under "message" and "turn": [position, run id, turn, role]. */
const STORED_BY_TURN = [
  [0, "run-1", 1, "user"],
  [1, "run-1", 1, "assistant"],
  [2, "run-1", 1, "tool"],
  [3, "run-1", 2, "assistant"],
];

function storeWithRecorder(userId: string) {
  const recorder = requestRecorder();
  const client = createMnemoClient({ baseUrl: live.server.baseUrl, interceptors: [recorder.interceptor] });
  return { store: new MnemoMemoryStore(client, { userId }), recorder, client };
}

/** The AppendMessages requests sent, as [runId, turn, message count]. */
function appends(recorder: ReturnType<typeof requestRecorder>) {
  return recorder.sent
    .filter((s) => s.method === "AppendMessages")
    .map((s) => [s.message["runId"], s.message["turn"], (s.message["messages"] as unknown[]).length]);
}

async function history(userId: string, sessionId: string) {
  const { messages } = await live.mnemo.conversations.listMessages({ parent: conversationName(userId, sessionId) });
  return messages.map((m) => [Number(m.position), m.runId, m.turn, m.role]);
}

describe("Anvia MemoryStore", () => {
  test("load of a session never written is empty", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-empty" });
    assert.deepEqual(await store.load({ scope: { sessionId: "none" } }), []);
  });

  test("append then load returns the canonical history verbatim, parts and metadata included", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-load" });
    const scope = { sessionId: "thread_123" };
    const messages = [user("hi"), toolCall, toolResult, assistant("done")];
    await store.append({ scope, runId: "r1", turn: 1, messages });
    await store.append({ scope, runId: "r2", turn: 1, messages: [user("again")] });
    assert.deepEqual(await store.load({ scope }), [...messages, user("again")]);
  });

  test("scope.userId names the user; other users' sessions are apart", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-default" });
    await store.append({ scope: { sessionId: "s", userId: "a-other" }, runId: "r", turn: 1, messages: [user("x")] });
    assert.deepEqual(await store.load({ scope: { sessionId: "s" } }), []);
    assert.deepEqual(await store.load({ scope: { sessionId: "s", userId: "a-other" } }), [user("x")]);
  });

  test('savePolicy "message": one write per completed message, as soon as it is ready', async () => {
    const { store, recorder, client } = storeWithRecorder("a-message");
    await runAnvia(store, { sessionId: "s" }, "run-1", "message");
    client.close();
    assert.deepEqual(appends(recorder), [
      ["run-1", 1, 1],
      ["run-1", 1, 1],
      ["run-1", 1, 1],
      ["run-1", 2, 1],
    ]);
    assert.deepEqual(await history("a-message", "s"), STORED_BY_TURN);
  });

  test('savePolicy "turn": one write per model/tool turn', async () => {
    const { store, recorder, client } = storeWithRecorder("a-turn");
    await runAnvia(store, { sessionId: "s" }, "run-1", "turn");
    client.close();
    assert.deepEqual(appends(recorder), [
      ["run-1", 1, 3],
      ["run-1", 2, 1],
    ]);
    assert.deepEqual(await history("a-turn", "s"), STORED_BY_TURN);
  });

  test('savePolicy "run": one write after the final response, none for a failed run', async () => {
    const { store, recorder, client } = storeWithRecorder("a-run");
    await runAnvia(store, { sessionId: "s" }, "run-1", "run");
    await runAnvia(store, { sessionId: "s" }, "run-2", "run", true);
    client.close();
    assert.deepEqual(appends(recorder), [["run-1", 2, 4]]);
    assert.deepEqual(recorder.methods(), ["AppendMessages", "RecordFailedRun"]);
    assert.deepEqual(await history("a-run", "s"), [
      [0, "run-1", 2, "user"],
      [1, "run-1", 2, "assistant"],
      [2, "run-1", 2, "tool"],
      [3, "run-1", 2, "assistant"],
    ]);
  });

  test("a write whose response was lost is retried with the same request id and applied once", async () => {
    const recorder = requestRecorder();
    const client = createMnemoClient({
      baseUrl: live.server.baseUrl,
      interceptors: [loseResponses("AppendMessages", 1), recorder.interceptor],
    });
    const store = new MnemoMemoryStore(client, { userId: "a-retry" });
    const scope = { sessionId: "s" };
    await store.append({ scope, runId: "r1", turn: 1, messages: [user("once")] });
    // Anvia calling again with the same input (its own retry) is also applied once.
    await store.append({ scope, runId: "r1", turn: 1, messages: [user("once")] });
    client.close();
    const ids = recorder.sent.map((s) => s.message["requestId"]);
    assert.equal(ids.length, 3);
    assert.ok(typeof ids[0] === "string" && ids[0] !== "");
    assert.ok(ids.every((id) => id === ids[0]));
    assert.deepEqual(await new MnemoMemoryStore(live.mnemo, { userId: "a-retry" }).load({ scope }), [user("once")]);
  });

  test("clear empties the session (a session never written too); failed runs are kept", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-clear" });
    const scope = { sessionId: "s" };
    await store.append({ scope, runId: "r1", turn: 1, messages: [user("a"), assistant("b")] });
    await store.recordError({ scope, runId: "r2", error: new Error("boom"), messages: [user("c")] });
    await store.clear({ scope });
    assert.deepEqual(await store.load({ scope }), []);
    const { failedRuns } = await live.mnemo.conversations.listFailedRuns({ parent: conversationName("a-clear", "s") });
    assert.equal(failedRuns.length, 1);
    await store.clear({ scope: { sessionId: "never" } });
    await store.append({ scope, runId: "r3", turn: 1, messages: [user("fresh")] });
    assert.deepEqual(await history("a-clear", "s"), [[0, "r3", 1, "user"]]);
  });

  test("recordError keeps the error and the partial messages apart from the history", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-error" });
    const scope = { sessionId: "s" };
    const error = Object.assign(new Error("rate limited"), { code: "RATE_LIMIT" });
    await store.recordError({ scope, runId: "r1", error, messages: [user("partial"), toolCall] });
    await store.recordError({ scope, runId: "r1", error, messages: [user("partial"), toolCall] });
    const { failedRuns } = await live.mnemo.conversations.listFailedRuns({ parent: conversationName("a-error", "s") });
    assert.equal(failedRuns.length, 1);
    const [run] = failedRuns;
    assert.equal(run?.runId, "r1");
    assert.equal(run?.error?.message, "rate limited");
    assert.equal(run?.error?.code, "RATE_LIMIT");
    assert.deepEqual(run?.messages.map((m) => JSON.parse(m.messageJson)), [user("partial"), toolCall]);
    assert.deepEqual(await store.load({ scope }), []);
  });

  test("a message Mnemo refuses rejects with INVALID_MESSAGE", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-invalid" });
    const bad = { role: "narrator", content: "x" } as unknown as anvia.Message;
    await assert.rejects(store.append({ scope: { sessionId: "s" }, runId: "r", turn: 1, messages: [bad] }), (e: unknown) => {
      assert.ok(e instanceof MnemoError);
      assert.equal(e.reason, "INVALID_MESSAGE");
      return true;
    });
  });

  test("inspector lists conversations newest first and gets one with its messages", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-inspect" });
    await store.append({
      scope: { sessionId: "older", metadata: { channel: "web" } },
      runId: "r1",
      turn: 1,
      messages: [user("first")],
    });
    await store.append({ scope: { sessionId: "newer chat" }, runId: "r2", turn: 3, messages: [user("q"), assistant("a")] });
    const listed = await store.inspector.listConversations({ limit: 10 });
    assert.deepEqual(
      listed.map((c) => [c.sessionId, c.userId, c.messageCount]),
      [
        ["newer chat", "a-inspect", 2],
        ["older", "a-inspect", 1],
      ],
    );
    assert.deepEqual(listed[1]?.metadata, { channel: "web" });
    assert.ok(!Number.isNaN(Date.parse(listed[0]?.createdAt ?? "")));
    assert.equal((await store.inspector.listConversations({ limit: 1 })).length, 1);
    assert.deepEqual(await store.inspector.listConversations({ limit: 5, userId: "a-nobody" }), []);

    const conversation = await store.inspector.getConversation({ ref: listed[0]?.ref ?? "" });
    assert.equal(conversation?.sessionId, "newer chat");
    assert.deepEqual(
      conversation?.messages.map((m) => [m.position, m.runId, m.turn, m.message]),
      [
        [0, "r2", 3, user("q")],
        [1, "r2", 3, assistant("a")],
      ],
    );
    assert.equal(await store.inspector.getConversation({ ref: "users/a-inspect/conversations/missing" }), undefined);
    assert.equal(await store.inspector.getConversation({ ref: "not a ref" }), undefined);
  });

  test("compaction: snapshot, replacePrefix committed, and conflict on a stale revision", async () => {
    const store = new MnemoMemoryStore(live.mnemo, { userId: "a-compact" });
    const scope = { sessionId: "s" };
    assert.deepEqual(await store.compaction.snapshot({ scope }), { revision: "", messages: [] });
    const messages = [user("one"), assistant("two"), user("three"), assistant("four")];
    await store.append({ scope, runId: "r1", turn: 1, messages });
    const snapshot = await store.compaction.snapshot({ scope });
    assert.ok(snapshot.revision);
    assert.deepEqual(snapshot.messages, messages);

    const summary: anvia.MemoryCompactionMessage = {
      role: "system",
      content: "Summary: one, two.",
      metadata: { anvia: { memoryCompaction: { version: 1, compactedMessageCount: 2 } } },
    };
    const replace = { scope, revision: snapshot.revision, messageCount: 2, replacement: summary, runId: "r2" };
    assert.deepEqual(await store.compaction.replacePrefix(replace), { status: "committed" });
    // The same call again (a retry) is the same commit, not a second one.
    assert.deepEqual(await store.compaction.replacePrefix(replace), { status: "committed" });
    const compacted = await store.compaction.snapshot({ scope });
    assert.deepEqual(compacted.messages, [summary, user("three"), assistant("four")]);
    assert.notEqual(compacted.revision, snapshot.revision);
    // Canonical messages are never lost: load still replays everything.
    assert.deepEqual(await store.load({ scope }), messages);

    // Appends do not make a revision stale; another compaction does.
    await store.append({ scope, runId: "r3", turn: 1, messages: [user("five")] });
    const other = { ...replace, revision: compacted.revision, messageCount: 1, runId: "r4" };
    assert.deepEqual(await store.compaction.replacePrefix(other), { status: "committed" });
    const stale = { ...replace, revision: compacted.revision, messageCount: 2, runId: "r5" };
    assert.deepEqual(await store.compaction.replacePrefix(stale), { status: "conflict" });

    // A clear makes it stale too.
    const beforeClear = await store.compaction.snapshot({ scope });
    await store.clear({ scope });
    const afterClear = { ...replace, revision: beforeClear.revision, messageCount: 1, runId: "r6" };
    assert.deepEqual(await store.compaction.replacePrefix(afterClear), { status: "conflict" });
  });
});
