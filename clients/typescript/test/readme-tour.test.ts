/**
 * The README's TypeScript tour runs as written (against the runner's shared
 * server instead of 127.0.0.1:50051) after the entry the Python tour saves,
 * prints exactly what the README shows after it, and
 * leaves nothing that keeps Node running: right after its last line
 * (`mnemo.close()`) no timer is active (the deadline timer of the
 * `watchChanges` stream it breaks out of used to keep the process alive for
 * the client's 10 s timeout), and the process exits by itself (a hang check:
 * it fails only if the process had to be killed at the bound).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { startMnemoServer } from "./support/server.js";
import { createMnemoClient, userName } from "../src/index.js";

const README = fileURLToPath(new URL("../../../../README.md", import.meta.url));
const PACKAGE_ENTRY = fileURLToPath(new URL("../src/index.js", import.meta.url));
/** Past this the tour's process is killed and the test fails: it hangs. */
const HANG_BOUND_MS = 60_000;

function tour(): string {
  const text = readFileSync(README, "utf8");
  return text.slice(text.indexOf("## A five-minute tour"));
}

function tourCode(): string {
  const match = /```ts\n([\s\S]*?)```/.exec(tour());
  assert.ok(match?.[1], "the README tour has no TypeScript block");
  return match[1];
}

/** The lines of the text block after the TypeScript block ("it prints"). */
function shownOutput(): string[] {
  const match = /```ts\n[\s\S]*?```\n\n[^\n]*prints[^\n]*:\n\n```text\n([\s\S]*?)```/.exec(tour());
  assert.ok(match?.[1], "the README shows no output after the TypeScript tour");
  return match[1].trimEnd().split("\n");
}

test("the README TypeScript tour runs and prints what it promises", async () => {
  // A server as `make run` starts it: with the default embedder.
  const server = await startMnemoServer({ args: ["--embedder", "local"] });
  const code = tourCode();
  assert.ok(code.includes('"http://127.0.0.1:50051"'));
  assert.ok(code.includes('"./dist/src/index.js"'));
  const mnemo = createMnemoClient({ baseUrl: server.baseUrl });
  try {
    // What the Python tour, run first, leaves in Ada's long-term memory.
    await mnemo.memories.createMemory({
      parent: userName("ada"),
      memory: { text: "Ada prefers vegan recipes.", key: "diet" },
    });
  } finally {
    mnemo.close();
  }
  const dir = mkdtempSync(join(tmpdir(), "mnemo-tour-"));
  try {
    const script = join(dir, "tour.mjs");
    const timers = 'console.log("timers", process.getActiveResourcesInfo().filter((r) => r === "Timeout"));';
    writeFileSync(
      script,
      code
        .replace('"http://127.0.0.1:50051"', JSON.stringify(server.baseUrl))
        .replace('"./dist/src/index.js"', JSON.stringify(pathToFileURL(PACKAGE_ENTRY).href)) +
        timers,
    );
    const { stdout } = await promisify(execFile)(process.execPath, [script], {
      timeout: HANG_BOUND_MS,
    });
    assert.deepEqual(stdout.trim().split("\n"), [...shownOutput(), "timers []"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  }
});
