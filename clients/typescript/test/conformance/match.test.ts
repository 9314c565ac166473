/**
 * The TypeScript conformance runner's matcher and placeholders
 * (test/conformance/scenario.ts), with no server: what matches, and that a
 * wrong expectation does not. `make test-conformance` runs the scenarios.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { StepFailed, lookup, mismatch, substitute, type Json } from "./scenario.js";

const MATCHES: [Json, Json][] = [
  [{ a: 1 }, { a: 1, b: 2 }],
  [{ n: 3 }, { n: "3" }],
  [{ n: "3" }, { n: 3 }],
  [{ gone: null }, {}],
  [{ xs: [{ k: "v" }] }, { xs: [{ k: "v", other: 1 }] }],
  [{ xs: { $len: 0 } }, {}],
  [{ s: { $any: true } }, { s: "x" }],
  [{ c: { $gt: 4 } }, { c: "5" }],
  [{ c: { $lte: 5 } }, { c: 5 }],
  [{ e: { $ne: "old" } }, { e: "new" }],
  [{ e: { $ne: "old" } }, {}],
  [{ t: { $contains: "ell" } }, { t: "hello" }],
  [{ xs: { $some: { k: 2 } } }, { xs: [{ k: 1 }, { k: 2 }] }],
  [[{ a: 1 }], [{ a: 1 }]],
];

const MISMATCHES: [Json, Json][] = [
  [{ a: 1 }, { a: 2 }],
  [{ a: 1 }, {}],
  [{ gone: null }, { gone: "here" }],
  [{ xs: [{ k: "v" }] }, { xs: [{ k: "v" }, { k: "w" }] }],
  [{ xs: { $len: 1 } }, {}],
  [{ s: { $any: true } }, {}],
  [{ c: { $gt: 5 } }, { c: "5" }],
  [{ c: { $gt: 5 } }, {}],
  [{ e: { $ne: "old" } }, { e: "old" }],
  [{ t: { $contains: "x" } }, { t: "hello" }],
  [{ xs: { $some: { k: 3 } } }, { xs: [{ k: 1 }, { k: 2 }] }],
  [{ b: true }, { b: 1 }],
  [{ n: 0 }, { n: "" }],
  [[{ a: 1 }], []],
];

describe("conformance matcher", () => {
  test("matches what the README says matches", () => {
    for (const [expected, actual] of MATCHES) {
      assert.equal(mismatch(expected, actual), undefined, JSON.stringify([expected, actual]));
    }
  });

  test("refuses a wrong expectation, saying where", () => {
    for (const [expected, actual] of MISMATCHES) {
      assert.ok(mismatch(expected, actual), JSON.stringify([expected, actual]));
    }
    assert.equal(mismatch({ m: { s: "a" } }, { m: { s: "b" } }), 'm.s: expected "a", got "b"');
  });

  test("placeholders and save paths", () => {
    const variables = new Map<string, Json>([
      ["user", "u1"],
      ["cursor", 7],
    ]);
    assert.deepEqual(substitute({ name: "users/${user}/x", after: "${cursor}" }, variables), {
      name: "users/u1/x",
      after: 7,
    });
    assert.deepEqual(substitute(["c${cursor}"], variables), ["c7"]);
    assert.throws(() => substitute("${missing}", variables), StepFailed);
    assert.equal(lookup({ memories: [{ name: "n0" }] }, "memories.0.name"), "n0");
    assert.throws(() => lookup({ memories: [{ name: "n0" }] }, "memories.1.name"), StepFailed);
  });
});
