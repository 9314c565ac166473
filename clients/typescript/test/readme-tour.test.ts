/**
 * The README's TypeScript tour runs as written (against the runner's shared
 * server instead of 127.0.0.1:50051) and prints what its comments promise.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { sharedServer } from "./support/server.js";

const README = fileURLToPath(new URL("../../../../README.md", import.meta.url));
const PACKAGE_ENTRY = fileURLToPath(new URL("../src/index.js", import.meta.url));

function tourCode(): string {
  const text = readFileSync(README, "utf8");
  const tour = text.slice(text.indexOf("## A five-minute tour"));
  const match = /```ts\n([\s\S]*?)```/.exec(tour);
  assert.ok(match?.[1], "the README tour has no TypeScript block");
  return match[1];
}

test("the README TypeScript tour runs and prints what it promises", async () => {
  const server = await sharedServer();
  const code = tourCode();
  assert.ok(code.includes('"http://127.0.0.1:50051"'));
  assert.ok(code.includes('"./dist/src/index.js"'));
  const dir = mkdtempSync(join(tmpdir(), "mnemo-tour-"));
  try {
    const script = join(dir, "tour.mjs");
    writeFileSync(
      script,
      code
        .replace('"http://127.0.0.1:50051"', JSON.stringify(server.baseUrl))
        .replace('"./dist/src/index.js"', JSON.stringify(pathToFileURL(PACKAGE_ENTRY).href)),
    );
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 60_000 });
    assert.deepEqual(stdout.trim().split("\n"), [
      "1 Ada lives in Lyon.",
      "true true",
      "ABORTED ETAG_MISMATCH",
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  }
});
