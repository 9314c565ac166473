/** The adapters' ids: SDK conversation ids as Mnemo ids, deterministic request ids. */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { deterministicRequestId, fromMnemoId, toMnemoId } from "../../src/adapters/ids.js";
import { sha256Hex } from "../../src/adapters/sha256.js";

describe("adapter ids", () => {
  test("sha256Hex agrees with node:crypto, across block boundaries and non-ASCII", () => {
    for (const text of ["", "abc", "a".repeat(55), "a".repeat(56), "a".repeat(64), "héllo ✓ 🌍".repeat(40)]) {
      assert.equal(sha256Hex(text), createHash("sha256").update(text, "utf8").digest("hex"));
    }
  });

  test("ids Mnemo accepts stay as they are; others are encoded one to one and decoded back", () => {
    assert.equal(toMnemoId("thread_123"), "thread_123");
    assert.equal(toMnemoId("a.b~c:d-e"), "a.b~c:d-e");
    assert.equal(toMnemoId("x".repeat(128)), "x".repeat(128));
    const odd = ["my chat", "a/b", "_leading", "ünï", "enc~abc", "", " ".repeat(93)];
    const encoded = odd.map(toMnemoId);
    assert.equal(new Set(encoded).size, odd.length);
    for (const [index, id] of encoded.entries()) {
      assert.match(id, /^[A-Za-z0-9][A-Za-z0-9._~:-]{0,127}$/);
      assert.equal(fromMnemoId(id), odd[index]);
    }
    // Too long to encode: a digest, the same every time (it cannot be decoded).
    const long = "y".repeat(129);
    assert.match(toMnemoId(long), /^enc~sha256~[0-9a-f]{64}$/);
    assert.equal(toMnemoId(long), toMnemoId(long));
  });

  test("request ids are the same for the same write and differ otherwise", () => {
    const a = deterministicRequestId("append", "users/u/conversations/c", "r1", 1, ["m"]);
    assert.equal(a, deterministicRequestId("append", "users/u/conversations/c", "r1", 1, ["m"]));
    assert.notEqual(a, deterministicRequestId("append", "users/u/conversations/c", "r1", 2, ["m"]));
    assert.ok(a.length <= 128);
  });
});
