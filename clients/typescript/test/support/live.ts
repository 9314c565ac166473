/**
 * What the facade tests share: a live server with a client for the whole
 * test file (before/after hooks), and helpers that read a call's outcome.
 *
 *     const live = withSharedServer();          // or withOwnServer({ ... })
 *     test("...", async () => { await live.mnemo.workingMemory.getMemoryState(...) });
 */
import { after, before } from "node:test";
import assert from "node:assert/strict";
import {
  sharedServer,
  startMnemoServer,
  type MnemoTestServer,
  type ServerOptions,
  type TestServer,
} from "./server.js";
import { Code, MnemoError, createMnemoClient, type MnemoClient } from "../../src/index.js";

/** A server and a default client (gRPC transport); set once `before` has run. */
export interface Live<S extends TestServer> {
  readonly server: S;
  readonly mnemo: MnemoClient;
}

function withServer<S extends TestServer>(start: () => Promise<S>): Live<S> {
  const live: { server?: S; mnemo?: MnemoClient } = {};
  before(async () => {
    live.server = await start();
    live.mnemo = createMnemoClient({ baseUrl: live.server.baseUrl });
  });
  after(async () => {
    live.mnemo?.close();
    await live.server?.close();
  });
  return {
    get server(): S {
      assert.ok(live.server, "the server is set in before()");
      return live.server;
    },
    get mnemo(): MnemoClient {
      assert.ok(live.mnemo, "the client is set in before()");
      return live.mnemo;
    },
  };
}

/** The runner's shared server (see sharedServer): use user ids of this file's own. */
export function withSharedServer(): Live<TestServer> {
  return withServer(sharedServer);
}

/** A server of this file's own, which its tests may stop, restart or suspend. */
export function withOwnServer(options: ServerOptions = {}): Live<MnemoTestServer> {
  return withServer(() => startMnemoServer(options));
}

/** The MnemoError `promise` rejects with; fails the test if it resolves or throws anything else. */
export async function failure(promise: Promise<unknown>): Promise<MnemoError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MnemoError, `expected a MnemoError, got ${String(error)}`);
    return error;
  }
  assert.fail("the call succeeded");
}

/** Every item of a stream, once it ends. */
export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

/**
 * `client.close()` while a watch of `user`'s changes waits for its next
 * message ends the watch: the next read fails with CANCELED at once (not a
 * heartbeat, not the deadline). Closes `client`.
 */
export async function closeEndsAWatch(client: MnemoClient, user: string): Promise<void> {
  try {
    const watch = client.sync.watchChanges({ parent: `users/${user}` })[Symbol.asyncIterator]();
    const first = await watch.next(); // the heartbeat after the (empty) backlog
    assert.equal(first.done, false);
    assert.equal(first.value?.event.case, "heartbeat");
    client.close();
    const error = await failure(watch.next());
    assert.equal(error.code, Code.Canceled);
  } finally {
    client.close();
  }
}
