// The browser demo (clients/typescript/web-demo) in headless Chromium against a live Mnemo server.
//
// Builds the demo with esbuild, serves it from a static server on one
// 127.0.0.1 port, starts `python -m mnemo_server serve` with the web port on
// another (so every call is cross-origin and passes the server's CORS), drives
// Debian's chromium with playwright-core through save, watch and recall, and
// checks what the page shows. `make test-browser` runs it (node --test).
import assert from "node:assert/strict";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { esbuild, launchChromium, startMnemo, stopMnemo, TS_DIR } from "./support.mjs";

const DEMO_DIR = join(TS_DIR, "web-demo");
const STEP_TIMEOUT_MS = 20_000;

/** Bundle main.ts (and the client it imports) next to a copy of index.html. */
async function buildDemo(outDir) {
  await esbuild.build({
    entryPoints: [join(DEMO_DIR, "main.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    outfile: join(outDir, "main.js"),
    logLevel: "warning",
  });
  await copyFile(join(DEMO_DIR, "index.html"), join(outDir, "index.html"));
}

const CONTENT_TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript" };

/** A static file server for the built demo on a free 127.0.0.1 port. */
async function serveStatic(dir) {
  const server = createServer(async (request, response) => {
    const name = new URL(request.url ?? "/", "http://x").pathname.replace(/^\/+/, "");
    if (!(name in { "index.html": 1, "main.js": 1 })) {
      response.writeHead(404).end();
      return;
    }
    const extension = name.slice(name.lastIndexOf("."));
    response.writeHead(200, { "content-type": CONTENT_TYPES[extension] });
    response.end(await readFile(join(dir, name)));
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

test("the web demo saves, watches and recalls memories over gRPC-Web", { timeout: 180_000 }, async () => {
  const scratch = await mkdtemp(join(tmpdir(), "mnemo-browser-"));
  const cleanups = [() => rm(scratch, { recursive: true, force: true })];
  try {
    await buildDemo(scratch);
    const site = await serveStatic(scratch);
    cleanups.unshift(() => new Promise((done) => site.server.close(done)));
    const mnemo = await startMnemo(join(scratch, "data"), ["--web-cors-origins", site.origin]);
    let stopped = false;
    cleanups.unshift(() => (stopped ? undefined : stopMnemo(mnemo.child)));
    const context = await launchChromium(join(scratch, "chromium-profile"));
    cleanups.unshift(() => context.close());

    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    const pageErrors = [];
    page.on("pageerror", (error) => pageErrors.push(String(error)));

    await page.goto(`${site.origin}/index.html?server=${encodeURIComponent(mnemo.webUrl)}`);
    await page.locator("#status", { hasText: "ready" }).waitFor();

    // Watch first: the saves below must arrive on the open stream.
    await page.click("#watch");
    await page.locator("#watch-status", { hasText: "watching" }).waitFor();

    for (const text of ["Prefers green tea", "Takes the train to work"]) {
      await page.fill("#text", text);
      await page.click("#save");
      await page.locator("#saved", { hasText: text }).waitFor();
      await page.locator("#changes li", { hasText: text }).waitFor();
    }
    const changes = await page.locator("#changes li").allTextContents();
    assert.equal(changes.length, 2);
    assert.match(changes[0], /^#\d+ UPSERT /);
    assert.match(changes[0], /users\/demo\/memories\/\S+ Prefers green tea$/);

    await page.fill("#query", "tea");
    await page.click("#recall");
    await page.locator("#recalled[data-done=true]").waitFor();
    assert.deepEqual(await page.locator("#recalled li").allTextContents(), ["Prefers green tea"]);

    // A refused call shows its code and reason (the server's ErrorInfo).
    await page.fill("#user", "no/such user");
    await page.fill("#text", "x");
    await page.click("#save");
    await page.locator("#error", { hasText: "INVALID" }).waitFor();

    await page.click("#stop");
    await page.locator("#watch-status", { hasText: "stopped" }).waitFor();
    if (process.env.MNEMO_BROWSER_SCREENSHOT) {
      await page.screenshot({ path: process.env.MNEMO_BROWSER_SCREENSHOT, fullPage: true });
    }
    assert.deepEqual(pageErrors, []);

    await context.close();
    cleanups.shift();
    stopped = true;
    assert.equal(await stopMnemo(mnemo.child), 0, `mnemo serve did not stop cleanly:\n${mnemo.log()}`);
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
});
