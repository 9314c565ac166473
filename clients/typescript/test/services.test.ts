/**
 * A client stream through the facade over the gRPC transport, against one
 * live server: export (a server stream), erase, import (a client stream).
 * The services' behaviour call by call is the conformance suite
 * (tests/conformance/scenarios, run in every language by
 * `make test-conformance`), which took over the tests of this file that
 * repeated it.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { withSharedServer, collect } from "./support/live.js";
import { memoryStateName, userName } from "../src/index.js";

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
});
