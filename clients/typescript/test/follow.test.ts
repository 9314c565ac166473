/**
 * ChangeFollower: what it does after each error, and against live servers:
 * backlog then live changes, a server restart, a cursor of another database
 * (CURSOR_AHEAD, resynced), and on PostgreSQL every backend of the server
 * killed (its watch's among them): no gap, no duplicate, whatever happens.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { failure, withOwnServer } from "./support/live.js";
import { startMnemoServer, type MnemoTestServer } from "./support/server.js";
import { startPostgres, type ThrowawayPostgres } from "./support/postgres.js";
import {
  ChangeFollower,
  Code,
  MnemoError,
  conversationName,
  createMnemoClient,
  followBackoffMs,
  nextStep,
  type ChangeFollowerOptions,
  type MnemoClient,
} from "../src/index.js";

const WAIT_MS = 30_000;

function error(code: Code, reason = ""): MnemoError {
  return new MnemoError({ code, rawMessage: "x", reason });
}

describe("what a follower does after an error", () => {
  const steps: [Code, string, string][] = [
    [Code.Aborted, "WATCH_LAGGING", "resume"],
    [Code.Unavailable, "", "backoff"],
    [Code.Internal, "", "backoff"], // a proxy's
    [Code.Internal, "INTERNAL", "backoff"],
    [Code.Unknown, "", "backoff"],
    [Code.Canceled, "", "backoff"],
    [Code.DeadlineExceeded, "", "backoff"],
    [Code.ResourceExhausted, "RATE_LIMITED", "backoff"],
    [Code.Aborted, "CONCURRENT_MODIFICATION", "backoff"],
    [Code.OutOfRange, "CURSOR_EXPIRED", "resync"],
    [Code.OutOfRange, "CURSOR_AHEAD", "resync"],
  ];
  for (const [code, reason, step] of steps) {
    test(`${Code[code]} ${reason}: ${step}`, () => {
      assert.equal(nextStep(error(code, reason)), step);
    });
  }

  test("every other error is thrown", () => {
    for (const [code, reason] of [
      [Code.Aborted, "ETAG_MISMATCH"],
      [Code.InvalidArgument, "INVALID_NAME"],
      [Code.Unauthenticated, "UNAUTHENTICATED"],
      [Code.PermissionDenied, "PERMISSION_DENIED"],
    ] as const) {
      const fatal = error(code, reason);
      assert.throws(() => nextStep(fatal), (thrown) => thrown === fatal);
    }
  });

  test("the backoff doubles up to its ceiling", () => {
    const first = followBackoffMs(1, 5_000);
    assert.ok(first >= 50 && first <= 100, String(first));
    const second = followBackoffMs(2, 5_000);
    assert.ok(second >= 100 && second <= 200, String(second));
    const capped = followBackoffMs(30, 5_000);
    assert.ok(capped >= 2_500 && capped <= 5_000, String(capped));
  });
});

/** A follower iterated in the background; the change cursors it yielded. */
class Following {
  readonly cursors: bigint[] = [];
  readonly errors: MnemoError[] = [];
  readonly resyncs: MnemoError[] = [];
  readonly follower: ChangeFollower;
  private readonly abort = new AbortController();
  private failed: unknown;
  private readonly done: Promise<void>;

  constructor(mnemo: MnemoClient, user: string, options: ChangeFollowerOptions = {}) {
    this.follower = new ChangeFollower(mnemo, user, {
      maxBackoffMs: 500,
      onError: (e) => this.errors.push(e),
      signal: this.abort.signal,
      ...options,
    });
    this.done = this.run();
  }

  private async run(): Promise<void> {
    try {
      for await (const event of this.follower) {
        if (event.case === "change") this.cursors.push(event.value.cursor);
      }
    } catch (error) {
      this.failed = error;
    }
  }

  /** Waits until a change with `cursor` (or a later one) was yielded. */
  async until(cursor: bigint): Promise<bigint[]> {
    const deadline = Date.now() + WAIT_MS;
    while ((this.cursors.at(-1) ?? -1n) < cursor) {
      if (this.failed !== undefined) throw this.failed;
      assert.ok(Date.now() < deadline, `stalled at ${this.cursors.at(-1)} waiting for ${cursor}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return this.cursors;
  }

  async stop(): Promise<unknown> {
    this.abort.abort();
    await this.done;
    return this.failed;
  }
}

async function appendMessages(mnemo: MnemoClient, user: string, ...texts: string[]): Promise<bigint> {
  let cursor = 0n;
  for (const text of texts) {
    const response = await mnemo.conversations.appendMessages({
      conversation: conversationName(user, "chat"),
      messages: [{ messageJson: JSON.stringify({ role: "user", content: text }) }],
    });
    cursor = response.changeCursor;
  }
  return cursor;
}

function range(from: bigint, to: bigint): bigint[] {
  const all: bigint[] = [];
  for (let cursor = from; cursor <= to; cursor++) all.push(cursor);
  return all;
}

describe("a follower against a live server", () => {
  const live = withOwnServer({ args: ["--watch-heartbeat-seconds", "0.2"] });

  test("backlog, then live changes, then across a server restart: no gap", async () => {
    const before = await appendMessages(live.mnemo, "fol-restart", "a", "b");
    const following = new Following(live.mnemo, "fol-restart");
    try {
      await following.until(before);
      await live.server.restart(); // SIGTERM ends the watch; UNAVAILABLE until it is back
      const after = await appendMessages(live.mnemo, "fol-restart", "c", "d");
      assert.deepEqual(await following.until(after), range(1n, after));
      assert.equal(following.follower.cursor, after);
    } finally {
      assert.equal(await following.stop(), undefined);
    }
  });

  test("a cursor of another database (CURSOR_AHEAD) is resynced", async () => {
    const latest = await appendMessages(live.mnemo, "fol-ahead", "x");
    const resyncs: MnemoError[] = [];
    const following = new Following(live.mnemo, "fol-ahead", {
      afterCursor: latest + 40n,
      onResync: (e) => {
        resyncs.push(e);
      },
    });
    try {
      const deadline = Date.now() + WAIT_MS;
      while (resyncs.length === 0) {
        assert.ok(Date.now() < deadline, "no resync");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const newer = await appendMessages(live.mnemo, "fol-ahead", "y");
      // After the resync, only what came after the latest cursor at that time.
      assert.deepEqual(await following.until(newer), range(latest + 1n, newer));
    } finally {
      assert.equal(await following.stop(), undefined);
    }
    assert.deepEqual(
      resyncs.map((e) => [e.code, e.reason, e.metadata["latest_cursor"]]),
      [[Code.OutOfRange, "CURSOR_AHEAD", String(latest)]],
    );
  });

  test("without onResync, CURSOR_AHEAD is thrown", async () => {
    const follower = new ChangeFollower(live.mnemo, "fol-ahead-thrown", { afterCursor: 5n });
    const thrown = await failure(
      (async () => {
        for await (const _ of follower) assert.fail("nothing is yielded");
      })(),
    );
    assert.equal(thrown.code, Code.OutOfRange);
    assert.equal(thrown.reason, "CURSOR_AHEAD");
    assert.equal(thrown.metadata["latest_cursor"], "0");
  });
});

describe("a follower on PostgreSQL whose backends are killed", () => {
  let pg: ThrowawayPostgres | undefined;
  let server: MnemoTestServer | undefined;
  let mnemo: MnemoClient | undefined;

  before(async () => {
    pg = await startPostgres();
    server = await startMnemoServer({
      databaseUrl: pg.url,
      args: ["--watch-heartbeat-seconds", "0.5"],
    });
    mnemo = createMnemoClient({ baseUrl: server.baseUrl });
  });

  after(async () => {
    mnemo?.close();
    await server?.close();
    await pg?.close();
  });

  test("the follower resumes without a gap", async () => {
    assert.ok(pg && mnemo);
    const user = "fol-pg";
    const first = await appendMessages(mnemo, user, "a", "b", "c");
    const following = new Following(mnemo, user);
    try {
      await following.until(first);
      let latest = first;
      for (let round = 0; round < 3; round++) {
        assert.ok((await pg.killBackends()) > 0, "the server's backends were killed");
        // The facade retries the UNAVAILABLE a write may meet meanwhile.
        latest = await appendMessages(mnemo, user, `after kill ${round} a`, `after kill ${round} b`);
      }
      assert.deepEqual(await following.until(latest), range(1n, latest));
    } finally {
      assert.equal(await following.stop(), undefined);
    }
    // Whatever ended a watch was recovered from, and never with a resync.
    assert.ok(following.errors.every((e) => nextStep(e) !== "resync"));
  });
});
