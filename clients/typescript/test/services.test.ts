/**
 * A client stream through the facade over the gRPC transport, against one
 * live server: export (a server stream), erase, import (a client stream).
 * The services' behaviour call by call is the conformance suite
 * (tests/conformance/scenarios, run in every language by
 * `make test-conformance`), which took over the tests of this file that
 * repeated it. Also the audit record of an erasure (ListUserErasures).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer, collect } from "./support/live.js";
import { memoryStateName, userName, type UserErasure } from "../src/index.js";

const live = withSharedServer();

describe("GovernanceService", () => {
  test("exports over a server stream, erases, imports over a client stream", async () => {
    const parent = userName("svc-gov-export");
    const name = memoryStateName("svc-gov-export");
    await live.mnemo.workingMemory.rememberExchange({ name, exchange: { ask: "hi", answer: "hello" } });
    const exported = await collect(live.mnemo.governance.exportUserData({ parent }));
    const records = exported.flatMap((r) => (r.record === undefined ? [] : [r.record]));
    assert.ok(records.some((r) => r.record.case === "memoryState"), "the working memory is exported");

    await live.mnemo.governance.deleteUserData({ parent });
    const erased = await live.mnemo.workingMemory.getMemoryState({ name });
    assert.equal(erased.memoryState?.recent.length, 0);

    const imported = await live.mnemo.governance.importUserData(
      (async function* () {
        for (const record of records) yield { parent, record };
      })(),
    );
    assert.ok(
      Object.values(imported.loaded).some((count) => count > 0n),
      `loaded ${Object.entries(imported.loaded).join(" ")}`,
    );
    const restored = await live.mnemo.workingMemory.getMemoryState({ name });
    assert.deepEqual(
      restored.memoryState?.recent.map((e) => e.ask),
      ["hi"],
    );
  });

  test("an erasure leaves the tenant an audit record with the receipt's counts", async () => {
    const parent = userName("svc-gov-erasure");
    await live.mnemo.memories.createMemory({ parent, memory: { text: "The user's umbrella is blue" } });
    const receipt = await live.mnemo.governance.deleteUserData({ parent });
    assert.equal(receipt.deletedRows["memories"], 1n);

    // Users without a tenant: "tenants/-"; every page, newest first.
    const found: UserErasure[] = [];
    let pageToken = "";
    do {
      const page = await live.mnemo.governance.listUserErasures({ parent: "tenants/-", pageToken });
      found.push(...page.erasures.filter((e) => e.user === parent));
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    assert.equal(found.length, 1, `records of ${parent}: ${found.length}`);
    const record = found[0]!;
    assert.deepEqual(record.deletedRows, receipt.deletedRows);
    assert.equal(record.erasedBy, "");
    assert.equal(record.byAdmin, false);
    assert.ok(record.eraseTime !== undefined);
  });
});
