/**
 * The browser entry point (src/web.ts) bundles for browsers: esbuild with
 * platform "browser" resolves every import without Node's built-in modules.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { build } from "esbuild";
import { repoPath } from "./support/server.js";

test("src/web.ts bundles for the browser with no Node module", async () => {
  const result = await build({
    entryPoints: [repoPath("clients", "typescript", "src", "web.ts")],
    bundle: true,
    platform: "browser",
    format: "esm",
    write: false,
    logLevel: "silent",
  });
  assert.deepEqual(result.errors, []);
  const code = result.outputFiles.map((file) => file.text).join("\n");
  assert.ok(code.includes("createGrpcWebTransport"), "the gRPC-Web transport is in the bundle");
  assert.doesNotMatch(code, /from\s*["']node:|require\(["']node:/, "no Node built-in is imported");
});
