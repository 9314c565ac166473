/**
 * gecx-chat's hybrid adapter against a live server that is stopped and
 * restarted: optimistic writes, rollback and keep, the change feed bringing
 * another device's changes (and an erasure) into the cache, an expired cursor.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { withOwnServer } from "../support/live.js";
import { Code, ConsentState, createMnemoClient, MnemoError, type MnemoClient } from "../../src/index.js";
import {
  createLocalMemoryAdapter,
  createMnemoHybridMemoryAdapter,
  createMnemoServerMemoryAdapter,
  InMemoryAsyncStorage,
  InMemoryLocalStorage,
  type HybridEvent,
  type KeyValueStorage,
  type RemoteFailurePolicy,
} from "../../src/adapters/index.js";
import { FAIL_FAST, waitFor } from "./support.js";

/** A server of this file's own (its tests stop it); `live.mnemo` is the other device's client. */
const live = withOwnServer();
const clients: MnemoClient[] = [];

after(() => {
  for (const client of clients) client.close();
});

/** This device: a hybrid adapter over its own client, failing fast while the server is down. */
function thisDevice(userId: string, onRemoteFailure?: RemoteFailurePolicy, storage: KeyValueStorage = new InMemoryLocalStorage()) {
  const client = createMnemoClient({ baseUrl: live.server.baseUrl, ...FAIL_FAST });
  clients.push(client);
  const remote = createMnemoServerMemoryAdapter(client, { userId });
  const cache = createLocalMemoryAdapter({ storage });
  const adapter = createMnemoHybridMemoryAdapter({
    remote,
    cache,
    onRemoteFailure,
    reconnect: { initialMs: 100, maxMs: 500 },
  });
  const events: HybridEvent[] = [];
  adapter.onEvent((event) => events.push(event));
  return { adapter, cache, events };
}

const unavailable = (e: unknown) => e instanceof MnemoError && e.code === Code.Unavailable;
const DAY = 24 * 60 * 60 * 1000;

describe("gecx-chat hybrid adapter", () => {
  test("writes land in the cache and on the server; the cache then holds the server's entry", async () => {
    const { adapter, cache } = thisDevice("h-online");
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-online" });
    const saved = await adapter.save({ text: "Prefers window seats.", key: "seat" });
    assert.deepEqual(await cache.get(saved.id), saved);
    assert.deepEqual((await remote.list()).map((e) => e.id), [saved.id]);

    const updated = await adapter.update(saved.id, { text: "Prefers aisle seats." });
    assert.equal((await cache.get(saved.id))?.text, "Prefers aisle seats.");
    assert.equal((await remote.list())[0]?.text, "Prefers aisle seats.");
    assert.ok(updated.updatedAt >= saved.updatedAt);

    const superseding = await adapter.save({ text: "Prefers the front row.", key: "seat" });
    assert.deepEqual((await adapter.list()).map((e) => e.id), [superseding.id]);
    assert.ok((await cache.get(saved.id))?.archivedAt);
    assert.deepEqual((await adapter.recall({ query: "front row" })).map((r) => r.entry.id), [superseding.id]);

    await adapter.delete(superseding.id);
    assert.equal(await cache.get(superseding.id), undefined);
    assert.deepEqual(await remote.list(), []);
  });

  test("a change made on another device arrives in the cache through the feed", async () => {
    const { adapter, cache, events } = thisDevice("h-devices", undefined, new InMemoryAsyncStorage());
    const elsewhere = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-devices" });
    const mine = await adapter.save({ text: "Has a dog named Rex.", key: "pet" });
    adapter.start();
    try {
      const theirs = await elsewhere.save({ text: "Moved to Berlin." });
      await waitFor("the other device's save", async () => (await cache.get(theirs.id))?.text === "Moved to Berlin.");
      await elsewhere.update(theirs.id, { text: "Moved to Hamburg." });
      await waitFor("the other device's update", async () => (await cache.get(theirs.id))?.text === "Moved to Hamburg.");
      // The archive and the new entry are two changes, applied as each arrives.
      const superseding = await elsewhere.save({ text: "Has a cat named Tom.", key: "pet" });
      await waitFor("the supersede", async () => {
        const archived = (await cache.get(mine.id))?.archivedAt !== undefined;
        return archived && (await cache.get(superseding.id)) !== undefined;
      });
      assert.deepEqual((await adapter.list({ key: "pet" })).map((e) => e.id), [superseding.id]);
      await elsewhere.delete(theirs.id);
      await waitFor("the other device's delete", async () => (await cache.get(theirs.id)) === undefined);
      await waitFor("its change event", () => events.some((e) => e.type === "change" && e.applied === "deleted"));
    } finally {
      await adapter.stop();
    }
  });

  test("list reads the server and puts what it got into the cache (server wins)", async () => {
    const { adapter, cache, events } = thisDevice("h-list");
    const elsewhere = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-list" });
    const mine = await adapter.save({ text: "Reads on the train." });
    // Another device's writes, with no feed followed: only the server knows them.
    const theirs = await elsewhere.save({ text: "Plays the cello." });
    await elsewhere.update(mine.id, { text: "Reads on the bus." });
    assert.deepEqual((await cache.list()).map((e) => e.text), ["Reads on the train."]);

    const listed = await adapter.list();
    assert.deepEqual(listed, await elsewhere.list());
    assert.deepEqual(listed.map((e) => e.id), [theirs.id, mine.id]);
    assert.equal((await cache.get(mine.id))?.text, "Reads on the bus.");
    assert.deepEqual(await cache.get(theirs.id), listed[0]);
    assert.ok(!events.some((e) => e.type === "read-degraded"));
  });

  test("server stopped, rollback (the default): the optimistic write is undone and the write rejects", async () => {
    const { adapter, cache, events } = thisDevice("h-rollback");
    const kept = await adapter.save({ text: "Drinks coffee black." });
    await live.server.stop();
    try {
      await assert.rejects(adapter.save({ text: "Likes sushi." }), unavailable);
      await assert.rejects(adapter.update(kept.id, { text: "Drinks tea." }), unavailable);
      await assert.rejects(adapter.delete(kept.id), unavailable);
      assert.deepEqual(await cache.list(), [kept]);
      assert.deepEqual(await adapter.pendingWrites(), []);
      assert.deepEqual(
        events.filter((e) => e.type === "rolled-back").map((e) => (e.type === "rolled-back" ? e.operation : "")),
        ["save", "update", "delete"],
      );
      // Reads degrade to the cache: a send is never blocked.
      assert.deepEqual(await adapter.list(), [kept]);
      assert.ok(events.some((e) => e.type === "read-degraded" && e.operation === "list"));
      assert.deepEqual((await adapter.recall({ query: "coffee" })).map((r) => r.entry.id), [kept.id]);
      assert.ok(events.some((e) => e.type === "read-degraded" && e.operation === "recall"));
    } finally {
      await live.server.start();
    }
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-rollback" });
    assert.deepEqual((await remote.list()).map((e) => [e.id, e.text]), [[kept.id, "Drinks coffee black."]]);
  });

  test("server stopped, keep: writes stay in the cache and are replayed when the server is back", async () => {
    const { adapter, cache, events } = thisDevice("h-keep", "keep");
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-keep" });
    const existing = await adapter.save({ text: "Runs on Sundays." });
    let offline: Awaited<ReturnType<typeof adapter.save>> | undefined;
    adapter.start();
    try {
      await live.server.stop();
      offline = await adapter.save({ text: "Training for a marathon.", key: "goal" });
      await adapter.update(existing.id, { text: "Runs on Saturdays." });
      const temporary = await adapter.save({ text: "Knee hurts today." });
      await adapter.delete(temporary.id);
      assert.deepEqual(
        (await adapter.pendingWrites()).map((w) => [w.kind, w.id]),
        [
          ["save", offline.id],
          ["update", existing.id],
          ["save", temporary.id],
          ["delete", temporary.id],
        ],
      );
      assert.deepEqual((await adapter.list()).map((e) => e.text).sort(), ["Runs on Saturdays.", "Training for a marathon."]);
      assert.deepEqual((await adapter.recall({ query: "marathon" })).map((r) => r.entry.id), [offline.id]);
      assert.equal(events.filter((e) => e.type === "kept").length, 4);

      const restartedAt = events.length;
      await live.server.start();
      await waitFor("the kept writes to be replayed", async () => (await adapter.pendingWrites()).length === 0);
      await waitFor("a sync after the replay", () => events.slice(restartedAt).some((e) => e.type === "synced"));
    } finally {
      await adapter.stop();
    }
    const onServer = await remote.list();
    const offlineId = offline?.id ?? "";
    assert.deepEqual(onServer.map((e) => [e.id, e.text]).sort(), [
      [existing.id, "Runs on Saturdays."],
      [offlineId, "Training for a marathon."],
    ].sort());
    // The cache now holds the server's entries (server wins), same ids as chosen offline.
    assert.deepEqual(await cache.get(offlineId), onServer.find((e) => e.id === offlineId));
    assert.ok(events.some((e) => e.type === "replayed"));
  });

  test("keep: a write the server refuses (not an outage) is rolled back all the same", async () => {
    const { adapter, cache } = thisDevice("h-refused", "keep");
    await live.mnemo.governance.setConsent({
      consent: { name: "users/h-refused/consent", state: ConsentState.WITHDRAWN, policyVersion: "v1" },
    });
    await assert.rejects(adapter.save({ text: "Not allowed." }), (e: unknown) => {
      return e instanceof MnemoError && e.reason === "MEMORY_CONSENT_WITHDRAWN";
    });
    assert.deepEqual(await cache.list({ includeArchived: true }), []);
    assert.deepEqual(await adapter.pendingWrites(), []);
  });

  test("an erasure of the user's data (the ERASE change) clears the cache", async () => {
    const { adapter, cache, events } = thisDevice("h-erase");
    await adapter.save({ text: "Secret one." });
    await adapter.save({ text: "Secret two." });
    adapter.start();
    try {
      await live.mnemo.governance.deleteUserData({ parent: "users/h-erase" });
      await waitFor("the cache to be cleared", async () => (await cache.list({ includeArchived: true })).length === 0);
      assert.ok(events.some((e) => e.type === "change" && e.applied === "erased"));
      const after = await adapter.save({ text: "A new beginning." });
      assert.deepEqual((await adapter.list()).map((e) => e.id), [after.id]);
    } finally {
      await adapter.stop();
    }
  });
});

describe("gecx-chat hybrid adapter: sameness and event time", () => {
  test("a save of a fact already live: the optimistic entry leaves the cache for the server's", async () => {
    const { adapter, cache } = thisDevice("h-same");
    const elsewhere = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-same" });
    const theirs = await elsewhere.save({ text: "Is vegan." });
    const city = await adapter.save({ text: "Lives in Oslo.", key: "city" });

    const again = await adapter.save({ text: "is  VEGAN!", id: "mine-vegan" });
    assert.equal(again.id, theirs.id);
    assert.equal(await cache.get("mine-vegan"), undefined);
    assert.deepEqual(await cache.get(theirs.id), again);
    // The same fact of the same key keeps the live entry: its optimistic archive is undone.
    const cityAgain = await adapter.save({ text: "Lives in Oslo.", key: "city" });
    assert.equal(cityAgain.id, city.id);
    assert.equal((await cache.get(city.id))?.archivedAt, undefined);
    assert.deepEqual((await cache.list({ includeArchived: true })).map((e) => e.id).sort(), [theirs.id, city.id].sort());
    assert.deepEqual((await elsewhere.list({ includeArchived: true })).map((e) => e.id).sort(), [theirs.id, city.id].sort());
  });

  test("a save carries its event time: a late keyed save of an older fact is an earlier version, in the cache too", async () => {
    const { adapter, cache } = thisDevice("h-historical");
    const elsewhere = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-historical" });
    const before = Date.now();
    const bergen = await adapter.save({ text: "Lives in Bergen.", key: "city" });
    assert.ok(bergen.eventTime !== undefined && bergen.eventTime >= before && bergen.eventTime <= bergen.createdAt);
    const lastYear = Date.now() - 365 * DAY;
    const oslo = await adapter.save({ text: "Lives in Oslo.", key: "city", eventTime: lastYear });
    assert.deepEqual([oslo.eventTime, oslo.validUntil], [lastYear, bergen.eventTime]);
    assert.ok(oslo.archivedAt !== undefined);
    assert.deepEqual(await cache.get(oslo.id), oslo);
    assert.equal((await cache.get(bergen.id))?.archivedAt, undefined);
    assert.deepEqual((await adapter.list({ key: "city" })).map((e) => e.id), [bergen.id]);
    assert.deepEqual((await elsewhere.list({ key: "city" })).map((e) => e.id), [bergen.id]);
  });

  test("a late keyed save the server keeps as historical: the entries the cache archived take the server's state", async () => {
    const { adapter, cache } = thisDevice("h-chain");
    const elsewhere = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-chain" });
    const now = Date.now();
    const [t0, t1, t2] = [now - 3 * DAY, now - 2 * DAY, now - DAY];
    const oslo = await adapter.save({ text: "Lives in Oslo.", key: "city", eventTime: t0 });
    // Another device's newer fact, which this cache has not seen (no feed followed).
    const bergen = await elsewhere.save({ text: "Lives in Bergen.", key: "city", eventTime: t2 });
    const trondheim = await adapter.save({ text: "Lives in Trondheim.", key: "city", eventTime: t1 });
    assert.ok(trondheim.archivedAt !== undefined);
    assert.equal(trondheim.validUntil, t2);
    // The cache archived Oslo for the save; the server had archived it for Bergen: it stays archived,
    // valid until the late save's time, as the server has it.
    const cachedOslo = await cache.get(oslo.id);
    assert.ok(cachedOslo?.archivedAt !== undefined);
    assert.equal(cachedOslo?.validUntil, t1);
    assert.deepEqual(cachedOslo, (await elsewhere.list({ includeArchived: true })).find((e) => e.id === oslo.id));
    assert.deepEqual(await cache.list({ key: "city" }), []);
    assert.deepEqual((await adapter.list({ key: "city" })).map((e) => e.id), [bergen.id]);

    // An entry cached without an event time (by an earlier version of the adapter) that the server
    // keeps current: the cache archived it for an older save, and it is live again.
    const home = await adapter.save({ text: "Works from home.", key: "office" });
    await cache.transact((document) => {
      for (const entry of document.entries) if (entry.id === home.id) delete entry.eventTime;
    });
    const older = await adapter.save({ text: "Works at the office.", key: "office", eventTime: t0 });
    assert.ok(older.archivedAt !== undefined);
    const cachedHome = await cache.get(home.id);
    assert.equal(cachedHome?.archivedAt, undefined);
    assert.equal(cachedHome?.eventTime, home.eventTime);
  });

  test("a device clock more than a day ahead gives way to the server's; a given event time that far ahead is refused", async () => {
    const { adapter, cache } = thisDevice("h-clock");
    const real = Date.now;
    let saving: ReturnType<typeof adapter.save>;
    Date.now = () => real() + 2 * DAY; // read by save before its first await only
    try {
      saving = adapter.save({ text: "Set my watch wrong." });
    } finally {
      Date.now = real;
    }
    const saved = await saving;
    assert.ok(saved.eventTime !== undefined && Math.abs(saved.eventTime - Date.now()) < DAY);
    assert.deepEqual(await cache.get(saved.id), saved);
    await assert.rejects(
      adapter.save({ text: "Said tomorrow.", eventTime: Date.now() + 2 * DAY }),
      (e: unknown) => e instanceof MnemoError && e.code === Code.InvalidArgument,
    );
    assert.deepEqual((await cache.list({ includeArchived: true })).map((e) => e.id), [saved.id]);
  });

  test("keep: a kept save of a fact already live gives way to the server's entry when replayed, and later kept writes follow it", async () => {
    const { adapter, cache, events } = thisDevice("h-kept-same", "keep");
    const remote = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-kept-same" });
    const dog = await adapter.save({ text: "Has a dog named Rex." });
    const city = await adapter.save({ text: "Lives in Oslo.", key: "city" });
    await live.server.stop();
    let offlineDog, offlineCity, chess;
    try {
      // Offline, sameness is the server's to decide: each is cached (and queued) as a new entry.
      offlineDog = await adapter.save({ text: "Has a dog named Rex." });
      assert.notEqual(offlineDog.id, dog.id);
      await adapter.update(offlineDog.id, { pinned: true });
      offlineCity = await adapter.save({ text: "Lives in Oslo.", key: "city" });
      assert.ok((await cache.get(city.id))?.archivedAt !== undefined);
      chess = await adapter.save({ text: "Plays chess." });
      assert.equal((await adapter.pendingWrites()).length, 4);
    } finally {
      await live.server.start();
    }
    await adapter.sync();
    assert.deepEqual(await adapter.pendingWrites(), []);
    assert.ok(!events.some((e) => e.type === "dropped"));
    assert.equal(await cache.get(offlineDog.id), undefined);
    assert.equal(await cache.get(offlineCity.id), undefined);
    assert.equal((await cache.get(dog.id))?.pinned, true); // the kept update went to the server's entry
    assert.equal((await cache.get(city.id))?.archivedAt, undefined); // the server archived nothing
    const onServer = await remote.list({ includeArchived: true });
    assert.deepEqual(onServer.map((e) => e.id).sort(), [dog.id, city.id, chess.id].sort());
    assert.equal(onServer.find((e) => e.id === dog.id)?.pinned, true);
    // A kept save sent late keeps the time it was said.
    const sentLate = onServer.find((e) => e.id === chess.id);
    assert.equal(sentLate?.eventTime, chess.eventTime);
    assert.ok((sentLate?.createdAt ?? 0) > (chess.eventTime ?? Infinity));
    assert.deepEqual((await cache.list({ includeArchived: true })).map((e) => e.id).sort(), onServer.map((e) => e.id).sort());
  });
});

describe("gecx-chat hybrid adapter with a cache of another database", () => {
  test("a cursor beyond the server's latest (CURSOR_AHEAD) resyncs the cache from a full list", async () => {
    const { adapter, cache, events } = thisDevice("h-ahead");
    const elsewhere = createMnemoServerMemoryAdapter(live.mnemo, { userId: "h-ahead" });
    const here = await elsewhere.save({ text: "On this server." });
    await cache.transact((document) => {
      document.cursor = "9000"; // synced with another deployment
    });
    await adapter.sync();
    assert.ok(events.some((e) => e.type === "resynced"));
    assert.deepEqual((await cache.read()).entries.map((e) => e.id), [here.id]);
    assert.ok(BigInt((await cache.read()).cursor) < 9000n);
  });
});

describe("gecx-chat hybrid adapter with a short change retention", () => {
  const short = withOwnServer({
    args: ["--change-retention-seconds", "1", "--purge-interval-seconds", "0.2"],
  });

  test("an expired cursor (CURSOR_EXPIRED) resyncs the cache from a full list", async () => {
    const client = createMnemoClient({ baseUrl: short.server.baseUrl });
    clients.push(client);
    const remote = createMnemoServerMemoryAdapter(client, { userId: "h-expired" });
    const cache = createLocalMemoryAdapter({ storage: new InMemoryLocalStorage() });
    const adapter = createMnemoHybridMemoryAdapter({ remote, cache });
    const events: HybridEvent[] = [];
    adapter.onEvent((event) => events.push(event));
    await adapter.save({ text: "Seen before going away." });
    await adapter.sync();
    const cursor = BigInt((await cache.read()).cursor);

    const elsewhere = createMnemoServerMemoryAdapter(short.mnemo, { userId: "h-expired" });
    const away = await elsewhere.save({ text: "Written while away." });
    await waitFor("the cursor to expire", async () => {
      await elsewhere.save({ text: "Keeps the feed moving." });
      try {
        await short.mnemo.sync.listChanges({ parent: "users/h-expired", afterCursor: cursor });
        return false;
      } catch (error) {
        return error instanceof MnemoError && error.reason === "CURSOR_EXPIRED";
      }
    });
    await adapter.sync();
    assert.ok(events.some((e) => e.type === "resynced"));
    assert.equal((await cache.get(away.id))?.text, "Written while away.");
    assert.ok(BigInt((await cache.read()).cursor) > cursor);
  });
});
