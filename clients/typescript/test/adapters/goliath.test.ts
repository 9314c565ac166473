/** goliath's memory factory over a live Mnemo server. */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer } from "../support/live.js";
// From the package's entry point, as an app imports them.
import {
  createMnemoClient,
  MnemoError,
  memoryStateName,
  mnemoMemory,
  toMnemoId,
  type goliath,
} from "../../src/index.js";
import { FAIL_FAST, requestRecorder } from "./support.js";

const live = withSharedServer();

const exchange = (ask: string, at: number): goliath.Exchange => ({ ask, answer: `re: ${ask}`, at });

describe("goliath mnemoMemory", () => {
  test("a conversation never written loads as an empty state", async () => {
    const memory = mnemoMemory(live.mnemo, { userId: "g-empty" })("work");
    assert.deepEqual(await memory.load(), { summary: "", recent: [] });
  });

  test("save then load in another agent instance gives the state back, `at` to the millisecond", async () => {
    const state = { summary: "Planning a trip.", recent: [exchange("Book a train", 1_700_000_000_123)] };
    const first = mnemoMemory(live.mnemo, { userId: "g-roundtrip" });
    await first("trip").load();
    await first("trip").save(state);
    const second = mnemoMemory(live.mnemo, { userId: "g-roundtrip" });
    assert.deepEqual(await second("trip").load(), state);
  });

  test("an exchange without a usable `at` is stamped with the server's time", async () => {
    const memory = mnemoMemory(live.mnemo, { userId: "g-at" })("c");
    const before = Date.now();
    await memory.save({ summary: "", recent: [{ ask: "when?", answer: "now", at: Number.NaN }] });
    const [stamped] = (await mnemoMemory(live.mnemo, { userId: "g-at" })("c").load()).recent;
    assert.ok((stamped?.at ?? 0) >= before - 60_000);
  });

  test("undefined is the default conversation, kept apart from every named one", async () => {
    const memories = mnemoMemory(live.mnemo, { userId: "g-iso" });
    await memories(undefined).save({ summary: "default", recent: [exchange("a", 1)] });
    await memories("work").save({ summary: "work", recent: [exchange("b", 2)] });
    await memories("home").save({ summary: "home", recent: [] });
    assert.equal((await memories(undefined).load()).summary, "default");
    assert.equal((await memories("work").load()).summary, "work");
    assert.equal((await memories("home").load()).summary, "home");
    const stored = await live.mnemo.workingMemory.getMemoryState({ name: memoryStateName("g-iso") });
    assert.equal(stored.memoryState?.summary, "default");
    const named = await live.mnemo.workingMemory.getMemoryState({ name: memoryStateName("g-iso", "work") });
    assert.equal(named.memoryState?.summary, "work");
  });

  test("the factory hands out one Memory per id", () => {
    const memories = mnemoMemory(live.mnemo, { userId: "g-same" });
    assert.equal(memories("x"), memories("x"));
    assert.equal(memories(undefined), memories(undefined));
    assert.notEqual(memories("x"), memories(undefined));
  });

  test("any conversation id works: ids Mnemo refuses are encoded, one to one", async () => {
    const memories = mnemoMemory(live.mnemo, { userId: "g-ids" });
    const odd = ["my chat/1", "enc~x", "ünïcode ✓", "x".repeat(300)];
    for (const [index, id] of odd.entries()) {
      await memories(id).save({ summary: `s${index}`, recent: [] });
    }
    for (const [index, id] of odd.entries()) {
      assert.equal((await mnemoMemory(live.mnemo, { userId: "g-ids" })(id).load()).summary, `s${index}`);
    }
    const stored = await live.mnemo.workingMemory.getMemoryState({
      name: memoryStateName("g-ids", toMnemoId("my chat/1")),
    });
    assert.equal(stored.memoryState?.summary, "s0");
  });

  test("what cannot be read comes back as an empty state (and is reported)", async () => {
    const down = createMnemoClient({ baseUrl: "http://127.0.0.1:1", ...FAIL_FAST });
    const errors: unknown[] = [];
    try {
      const memory = mnemoMemory(down, { userId: "g-down", onLoadError: (e) => errors.push(e) })("c");
      assert.deepEqual(await memory.load(), { summary: "", recent: [] });
      assert.equal(errors.length, 1);
      assert.ok(errors[0] instanceof MnemoError);
    } finally {
      down.close();
    }
  });

  test("save is conditional on the etag its load saw; another device's write is merged, not lost", async () => {
    const recorder = requestRecorder();
    const phone = createMnemoClient({ baseUrl: live.server.baseUrl, interceptors: [recorder.interceptor] });
    try {
      const onPhone = mnemoMemory(phone, { userId: "g-etag" })("c");
      const onLaptop = mnemoMemory(live.mnemo, { userId: "g-etag" })("c");
      await onPhone.save({ summary: "start", recent: [exchange("one", 1)] });
      const loaded = await onPhone.load();
      const laptopState = await onLaptop.load();
      await onLaptop.save({ summary: "start", recent: [...laptopState.recent, exchange("laptop", 2)] });
      recorder.sent.length = 0;
      await onPhone.save({ summary: "start, then phone", recent: [...loaded.recent, exchange("phone", 3)] });
      assert.deepEqual(recorder.methods(), ["SaveMemoryState", "GetMemoryState", "SaveMemoryState"]);
      const [first, , retried] = recorder.sent;
      const etagOf = (r: typeof first) => (r?.message["memoryState"] as { etag: string }).etag;
      assert.ok(etagOf(first));
      assert.notEqual(etagOf(first), etagOf(retried));
      const merged = await mnemoMemory(live.mnemo, { userId: "g-etag" })("c").load();
      assert.equal(merged.summary, "start, then phone");
      assert.deepEqual(merged.recent.map((e) => e.ask), ["one", "laptop", "phone"]);
    } finally {
      phone.close();
    }
  });

  test("a save the server refuses rejects with its MnemoError (the summary budget is the server's)", async () => {
    const memory = mnemoMemory(live.mnemo, { userId: "g-budget" })("c");
    await memory.load();
    const summary = Array.from({ length: 80 }, (_, i) => `word${i}`).join(" ");
    await assert.rejects(memory.save({ summary, recent: [] }), (error: unknown) => {
      assert.ok(error instanceof MnemoError);
      assert.equal(error.reason, "SUMMARY_OVER_BUDGET");
      return true;
    });
  });
});
