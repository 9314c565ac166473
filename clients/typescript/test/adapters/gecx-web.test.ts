/**
 * The hybrid adapter as a browser or React Native app runs it: imported from
 * the web entry point, over gRPC-Web to the server's web port, with an
 * AsyncStorage-like cache; another device's change arrives through
 * WatchChanges over fetch.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer } from "../support/live.js";
import {
  createLocalMemoryAdapter,
  createMnemoClient,
  createMnemoHybridMemoryAdapter,
  createMnemoServerMemoryAdapter,
  InMemoryAsyncStorage,
} from "../../src/web.js";
import { waitFor } from "./support.js";

const live = withSharedServer();

describe("gecx-chat hybrid adapter over gRPC-Web", () => {
  test("writes go through the web port and another device's save arrives in the cache", async () => {
    const browser = createMnemoClient({ baseUrl: live.server.webBaseUrl });
    const remote = createMnemoServerMemoryAdapter(browser, { userId: "w-hybrid" });
    const cache = createLocalMemoryAdapter({ storage: new InMemoryAsyncStorage() });
    const adapter = createMnemoHybridMemoryAdapter({ remote, cache });
    try {
      const mine = await adapter.save({ text: "Saved from the browser." });
      assert.deepEqual(await cache.get(mine.id), mine);
      adapter.start();
      const theirs = await createMnemoServerMemoryAdapter(live.mnemo, { userId: "w-hybrid" }).save({
        text: "Saved on the phone.",
      });
      await waitFor("the phone's save in the browser's cache", async () => (await cache.get(theirs.id)) !== undefined);
      assert.deepEqual((await adapter.recall({ query: "phone" })).map((r) => r.entry.id), [theirs.id]);
    } finally {
      await adapter.stop();
      browser.close();
    }
  });
});
