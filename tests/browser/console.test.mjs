// The memory console (clients/typescript/console, served by the web port at
// /console/) in headless Chromium against a live `mnemo serve --auth jwt`.
//
// The test signs in with HS256 tokens it makes, seeds data through the
// TypeScript client over gRPC (as another client would), drives every part of
// the page and checks what it shows against what the server holds. It writes
// the screenshots of docs/console.md into docs/console/ on every run.
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { launchChromium, importNodeClient, ROOT, startMnemo, stopMnemo, TS_DIR } from "./support.mjs";

const SHOTS = join(ROOT, "docs/console");
const AUDIENCE = "mnemo-console-test";
const STEP_TIMEOUT_MS = 20_000;
const ALICE = "alice";
const TRIP = `users/${ALICE}/conversations/trip`;
// The console test's server recalls by words, which keeps every match by default: this minimum
// relevance (--min-relevance) makes it judge, as the default model does at 0.5, so that the
// Search view shows only what is relevant until "every match" is ticked.
const MIN_RELEVANCE = 0.7;

const base64url = (data) => Buffer.from(data).toString("base64url");

/** An HS256 JWT for `sub` (tenant acme), valid for ten minutes. */
function token(secret, sub, extra = {}) {
  const now = Math.floor(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const claims = base64url(JSON.stringify({ sub, aud: AUDIENCE, tenant: "acme", iat: now, exp: now + 600, ...extra }));
  const signature = createHmac("sha256", secret).update(`${header}.${claims}`).digest("base64url");
  return `${header}.${claims}.${signature}`;
}

/** Alice's memory, conversation, working memory and candidates, saved as an agent would. */
async function seed(mnemo, client) {
  const parent = `users/${ALICE}`;
  await client.conversations.appendMessages({
    conversation: TRIP,
    messages: [
      { messageJson: JSON.stringify({ role: "user", content: "Book me a train to Porto on Friday." }) },
      { messageJson: JSON.stringify({ role: "assistant", content: "Booked the 9:05 train to Porto, window seat, coach 3." }) },
    ],
  });
  await client.workingMemory.saveMemoryState({
    memoryState: {
      name: `${TRIP}/memoryState`,
      summary: "Alice is planning a Friday train trip to Porto.",
      recent: [{ ask: "Book me a train to Porto on Friday.", answer: "Booked the 9:05 train, window seat." }],
    },
  });
  const saved = [
    { memoryId: "tea", memory: { text: "Prefers green tea", key: "drink", pinned: true } },
    { memoryId: "train", memory: { text: "Takes the train to work", key: "commute" } },
    { memoryId: "sugar", memory: { text: "Drinks tea without sugar, never coffee" } },
    {
      memoryId: "seat",
      memory: { text: "Wants a window seat", key: "seat", scope: mnemo.MemoryScope.CONVERSATION, conversation: TRIP },
    },
  ];
  for (const request of saved) await client.memories.createMemory({ parent, ...request });
  await client.memories.proposeMemoryCandidates({
    parent,
    candidates: [
      { memory: { text: "Allergic to peanuts", key: "allergy" }, conversation: TRIP, extractor: "diet-notes" },
      { memory: { text: "Likes loud jazz", key: "music" }, conversation: TRIP, extractor: "diet-notes" },
    ],
  });
}

const DAY_MS = 86_400_000;
// Bob's imported events, per day ago (1..6): memory_saved and memory_recalled counts.
const PAST_SAVED = [3, 5, 2, 6, 4, 7];
const PAST_RECALLED = [2, 3, 4, 1, 5, 2];

const TODAY = Math.floor(Date.now() / DAY_MS);
/** The start (UTC midnight, ISO) of the day `daysAgo` days before the test's start. */
const dayStart = (daysAgo) => new Date((TODAY - daysAgo) * DAY_MS).toISOString();

/** Another user of tenant acme with a week of events, loaded by ImportUserData (which keeps their times). */
async function seedPastEvents(mnemo, bob) {
  const records = [];
  PAST_SAVED.forEach((saved, i) => {
    const noon = new Date(Date.parse(dayStart(i + 1)) + DAY_MS / 2);
    const add = (type, count) => {
      for (let n = 0; n < count; n += 1) {
        const createTime = mnemo.timestampFromDate(new Date(noon.getTime() + records.length * 1000));
        records.push({ event: { name: `users/bob/events/past${records.length}`, type, createTime } });
      }
    };
    add(mnemo.EventType.MEMORY_SAVED, saved);
    add(mnemo.EventType.MEMORY_RECALLED, PAST_RECALLED[i]);
  });
  async function* requests() {
    for (const record of records) yield { parent: "users/bob", record: { record: { case: "event", value: record.event } } };
  }
  await bob.governance.importUserData(requests());
}

// One browser for the file's tests, each in its own page.
let browser;
async function newPage(scratchRoot) {
  browser ??= await launchChromium(join(scratchRoot, "chromium-profile"), {
    viewport: { width: 1180, height: 760 },
    deviceScaleFactor: 1,
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  return page;
}
const browserScratch = mkdtemp(join(tmpdir(), "mnemo-console-browser-"));
after(async () => {
  await browser?.close();
  await rm(await browserScratch, { recursive: true, force: true });
});

const rowOf = (page, text) => page.locator("tr.memory", { hasText: text });
/** A Timestamp as the console shows it: UTC, to the minute. */
const formatTime = (time) => new Date(Number(time.seconds) * 1000).toISOString().slice(0, 16).replace("T", " ");

test("the committed console bundle is what its source builds", async () => {
  const { buildConsole, OUT_DIR } = await import(join(TS_DIR, "console/build.mjs"));
  for (const [name, contents] of Object.entries(await buildConsole())) {
    const committed = await readFile(join(OUT_DIR, name));
    assert.ok(Buffer.from(contents).equals(committed), `${name} is stale: run make console`);
  }
});

test("the memory console shows and governs a user's memory", { timeout: 180_000 }, async () => {
  const scratch = await mkdtemp(join(tmpdir(), "mnemo-console-"));
  const cleanups = [() => rm(scratch, { recursive: true, force: true })];
  try {
    const secret = randomBytes(48).toString("base64");
    await writeFile(join(scratch, "jwt.secret"), secret);
    const [mnemo, server] = await Promise.all([
      importNodeClient(scratch),
      startMnemo(join(scratch, "data"), [
        "--auth", "jwt",
        "--jwt-hs256-secret-file", join(scratch, "jwt.secret"),
        "--jwt-audience", AUDIENCE,
        "--min-relevance", String(MIN_RELEVANCE),
      ]),
    ]);
    let stopped = false;
    cleanups.unshift(() => (stopped ? undefined : stopMnemo(server.child)));
    const aliceToken = token(secret, ALICE);
    const adminToken = token(secret, "ops", { roles: ["mnemo:admin"] });
    const bob = mnemo.createMnemoClient({ baseUrl: server.grpcUrl, token: token(secret, "bob") });
    const alice = mnemo.createMnemoClient({ baseUrl: server.grpcUrl, token: aliceToken });
    const admin = mnemo.createMnemoClient({ baseUrl: server.grpcUrl, token: adminToken });
    cleanups.unshift(() => {
      alice.close();
      admin.close();
      bob.close();
    });
    await seed(mnemo, alice);
    await seedPastEvents(mnemo, bob);

    const page = await newPage(await browserScratch);
    cleanups.unshift(() => page.close());
    const pageErrors = [];
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    await mkdir(SHOTS, { recursive: true });
    const shot = (name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

    const signIn = async (jwt) => {
      await page.fill("#token", jwt);
      await page.click("#sign-in-button");
      await page.locator("#live[data-status=live]").waitFor();
    };

    // The page is the web port's own: /console redirects to /console/.
    await page.goto(`${server.webUrl}/console`);
    assert.equal(new URL(page.url()).pathname, "/console/");
    await page.locator("#sign-in").waitFor();
    await shot("sign-in");

    // A bad token is refused, with the server's reason on the page.
    await page.fill("#token", token("not-the-secret", ALICE));
    await page.click("#sign-in-button");
    await page.locator("#sign-in .error", { hasText: "UNAUTHENTICATED" }).waitFor();

    // Sign in: the memory list shows scope, key and pin of each entry.
    await signIn(aliceToken);
    assert.equal(await page.textContent("#signed-in-user"), ALICE);
    assert.equal(await page.textContent("#signed-in-tenant"), "acme");
    await page.locator("table.memories[data-count='4']").waitFor();
    // At phone width the memory list (one card an entry) stays inside its card: neither overflows the page.
    const assertFitsPhone = async () => {
      await page.setViewportSize({ width: 390, height: 760 });
      const fits = await page.evaluate(() => {
        const card = document.querySelector("table.memories").closest(".card");
        return {
          page: document.documentElement.scrollWidth <= window.innerWidth,
          card: card.getBoundingClientRect().right <= window.innerWidth,
        };
      });
      assert.deepEqual(fits, { page: true, card: true });
      await page.setViewportSize({ width: 1180, height: 760 });
    };
    await assertFitsPhone();
    const tea = page.locator("tr.memory[data-key=drink]");
    assert.equal(await tea.getAttribute("data-pinned"), "true");
    assert.equal(await tea.locator("td.key").textContent(), "drink");
    assert.equal(await tea.locator("td.scope").textContent(), "identity");
    assert.equal(await rowOf(page, "Wants a window seat").locator("td.scope").textContent(), "conversation trip");
    assert.equal(await rowOf(page, "Takes the train").getAttribute("data-pinned"), "false");

    // Pin; edit (a new version in the history); create and delete.
    await rowOf(page, "Takes the train").locator("button.pin").click();
    await page.locator("tr.memory[data-key=commute][data-pinned=true]").waitFor();
    await tea.locator("button.show-history").click();
    await tea.locator("button.edit-button").click();
    await page.fill("tr.memory[data-key=drink] input.edit-text", "Prefers oolong tea");
    await page.click("tr.memory[data-key=drink] button.save-edit");
    await page.locator("li.version", { hasText: "Prefers oolong tea" }).waitFor();
    assert.deepEqual(await page.locator("li.version .text").allTextContents(), ["Prefers oolong tea", "Prefers green tea"]);
    await page.fill("#new-text", "Owns a red bicycle");
    await page.click("#new-save");
    await rowOf(page, "Owns a red bicycle").locator("button.delete").click();
    await rowOf(page, "Owns a red bicycle").locator("button.confirm-delete").click();
    await rowOf(page, "Owns a red bicycle").waitFor({ state: "detached" });
    const stored = await alice.memories.listMemories({ parent: `users/${ALICE}` });
    assert.deepEqual(stored.memories.map((m) => [m.text, m.pinned]).sort(), [
      ["Drinks tea without sugar, never coffee", false],
      ["Prefers oolong tea", true],
      ["Takes the train to work", true],
      ["Wants a window seat", false],
    ]);

    // Live: an entry another client saves shows up without a reload.
    await alice.memories.createMemory({ parent: `users/${ALICE}`, memoryId: "home", memory: { text: "Lives in Lisbon", key: "home" } });
    await rowOf(page, "Lives in Lisbon").waitFor();
    await page.locator("table.memories[data-count='5']").waitFor();

    // As of: a keyed chain saved out of order (the older fact arrives last, as
    // from an offline device) is shown as it stood at a past time.
    const at = (iso) => mnemo.timestampFromDate(new Date(iso));
    const june = await alice.memories.createMemory({
      parent: `users/${ALICE}`,
      memoryId: "office-june",
      memory: { text: "Works from the Porto office", key: "office", eventTime: at("2026-06-01T00:00:00Z") },
    });
    const january = await alice.memories.createMemory({
      parent: `users/${ALICE}`,
      memoryId: "office-january",
      memory: { text: "Works from the Lisbon office", key: "office", eventTime: at("2026-01-01T00:00:00Z") },
    });
    assert.equal(june.outcome, mnemo.SaveOutcome.CREATED);
    assert.equal(january.outcome, mnemo.SaveOutcome.HISTORICAL);
    const porto = rowOf(page, "Works from the Porto office");
    await porto.waitFor();
    await page.locator("table.memories[data-count='6']").waitFor();
    assert.equal(await rowOf(page, "Works from the Lisbon office").count(), 0);
    // Each entry's event time ("stated") beside its stored time.
    assert.equal(await porto.locator("td.event-time").textContent(), "2026-06-01 00:00");
    assert.equal(await porto.locator("td.time").textContent(), formatTime(june.memory.updateTime));
    // As of 2026-03-01 (UTC): the January fact, superseded in June; nothing else was stated by then.
    await page.fill("#as-of", "2026-03-01T00:00");
    await page.locator("table.memories[data-as-of='2026-03-01T00:00:00.000Z'][data-count='1']").waitFor();
    const lisbon = rowOf(page, "Works from the Lisbon office");
    assert.equal(await lisbon.locator("td.event-time").textContent(), "2026-01-01 00:00 until 2026-06-01 00:00");
    assert.match(await page.textContent("#as-of-hint"), /2026-03-01 00:00/);
    await shot("as-of");
    // Cleared: the current entries again.
    await page.click("#as-of-clear");
    await page.locator("table.memories[data-as-of=''][data-count='6']").waitFor();
    assert.equal(await page.inputValue("#as-of"), "");
    await porto.waitFor();
    assert.equal(await rowOf(page, "Works from the Lisbon office").count(), 0);
    // The versions: each one's validity.
    await porto.locator("button.show-history").click();
    const officeVersions = page.locator("li.version", { hasText: "office" });
    await page.locator("li.version", { hasText: "Works from the Lisbon office" }).waitFor();
    const validities = new Map();
    for (const version of await officeVersions.all()) {
      validities.set(await version.getAttribute("data-text"), await version.locator(".validity").textContent());
    }
    assert.deepEqual(
      validities,
      new Map([
        ["Works from the Lisbon office", "valid from 2026-01-01 00:00 until 2026-06-01 00:00"],
        ["Works from the Porto office", "valid from 2026-06-01 00:00 until now"],
      ]),
    );
    await assertFitsPhone();
    await shot("memories");

    // Search: only the relevant entries, each with its relevance; "every match" shows the rest.
    await page.click("#tab-search");
    await page.fill("#query", "oolong tea");
    await page.click("#search-button");
    await page.locator("table.hits[data-done=true]").waitFor();
    const hits = page.locator("tr.hit");
    assert.deepEqual(await hits.locator(".text").allTextContents(), ["Prefers oolong tea"]);
    await page.check("#every-match");
    await page.locator("table.hits[data-every-match=true][data-count='2']").waitFor();
    assert.deepEqual(await hits.locator(".text").allTextContents(), ["Prefers oolong tea", "Drinks tea without sugar, never coffee"]);
    const scores = await hits.evaluateAll((rows) => rows.map((row) => Number(row.dataset.score)));
    const recalled = [];
    const every = { parent: `users/${ALICE}`, query: "oolong tea", maxResults: 20, minScore: 0 };
    for await (const hit of alice.memories.recallMemories(every)) recalled.push(Number(hit.score.toFixed(4)));
    assert.deepEqual(scores, recalled);
    assert.ok(scores[0] >= MIN_RELEVANCE && scores[1] < MIN_RELEVANCE, `scores ${scores}`);
    assert.match(await hits.first().locator("td.score").textContent(), /^\d+\.\d{3}$/);
    // A bar is the relevance itself (60 px is 1), not a share of the best hit's.
    const bars = await hits.locator(".score-bar").evaluateAll((spans) => spans.map((span) => span.getBoundingClientRect().width));
    assert.deepEqual(bars, scores.map((score) => Math.round(score * 60)));
    await shot("search");
    await page.uncheck("#every-match");
    await page.locator("table.hits[data-every-match=false][data-count='1']").waitFor();
    // A query nothing saved is about: nothing, and the page says so.
    await page.fill("#query", "tea party invitations");
    await page.click("#search-button");
    await page.locator("table.hits[data-every-match=false][data-count='0']").waitFor();
    assert.match(await page.locator("#search p.empty").textContent(), /Nothing saved is about this/);

    // Candidates: one approved (now a memory), one rejected.
    await page.click("#tab-candidates");
    await page.locator("ul.candidates[data-count='2']").waitFor();
    await shot("candidates");
    await page.locator("li.candidate", { hasText: "Allergic to peanuts" }).locator("button.approve").click();
    await page.locator("#candidate-outcome", { hasText: "Approved" }).waitFor();
    await page.locator("li.candidate", { hasText: "Likes loud jazz" }).locator("button.reject").click();
    await page.locator("#candidate-outcome", { hasText: "Rejected" }).waitFor();
    await page.locator("ul.candidates[data-count='0']").waitFor({ state: "attached" });
    const resolved = await alice.memories.listMemoryCandidates({ parent: `users/${ALICE}`, includeResolved: true });
    assert.deepEqual(resolved.candidates.map((c) => [c.memory?.text, mnemo.CandidateState[c.state]]).sort(), [
      ["Allergic to peanuts", "APPROVED"],
      ["Likes loud jazz", "REJECTED"],
    ]);
    await page.click("#tab-memories");
    await rowOf(page, "Allergic to peanuts").waitFor();

    // A conversation: its history and its working memory.
    await page.click("#tab-conversations");
    await page.click(`button.conversation[data-name='${TRIP}']`);
    await page.locator("ol.messages[data-count='2']").waitFor();
    assert.deepEqual(await page.locator("li.message .role").allTextContents(), ["user", "assistant"]);
    assert.match(await page.locator("li.message").nth(1).textContent(), /9:05 train to Porto/);
    await page.locator("#working-memory .summary", { hasText: "Friday train trip to Porto" }).waitFor();
    assert.equal(await page.locator("#working-memory li.exchange").count(), 1);
    await shot("conversation");

    // Consent and the memory switch, each with its effect stated.
    await page.click("#tab-privacy");
    await page.locator("#consent-effect[data-state=granted]").waitFor();
    await page.click("#consent-toggle");
    await page.locator("#consent-effect[data-state=withdrawn]", { hasText: "every memory write is refused" }).waitFor();
    const consent = await alice.governance.getConsent({ name: `users/${ALICE}/consent` });
    assert.equal(consent.consent?.state, mnemo.ConsentState.WITHDRAWN);
    await page.click("#consent-toggle");
    await page.locator("#consent-effect[data-state=granted]").waitFor();
    await page.click("#memory-switch-toggle");
    await page.locator("#switch-effect[data-enabled=false]", { hasText: "nothing is read, saved or extracted" }).waitFor();
    const settings = await alice.governance.getMemorySettings({ name: `users/${ALICE}/memorySettings` });
    assert.equal(settings.memorySettings?.enabled, false);
    await page.click("#tab-memories");
    await page.locator("#memories .error", { hasText: "MEMORY_DISABLED" }).waitFor();
    assert.match(await page.textContent("#memories .error .meaning"), /Memory is switched off/);
    await page.click("#tab-privacy");
    await page.click("#memory-switch-toggle");
    await page.locator("#switch-effect[data-enabled=true]").waitFor();

    // Export: a JSON Lines download of every record.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-button")]);
    assert.equal(download.suggestedFilename(), `mnemo-export-${ALICE}.jsonl`);
    const lines = (await readFile(await download.path(), "utf8")).trimEnd().split("\n").map((line) => JSON.parse(line));
    const texts = lines.flatMap((record) => (record.memory ? [record.memory.text] : []));
    assert.deepEqual(texts.sort(), [
      "Allergic to peanuts",
      "Drinks tea without sugar, never coffee",
      "Lives in Lisbon",
      "Prefers oolong tea",
      "Takes the train to work",
      "Wants a window seat",
      "Works from the Lisbon office",
      "Works from the Porto office",
    ]);
    assert.ok(lines.some((record) => record.conversation?.name === TRIP));
    assert.ok(lines.some((record) => record.memoryVersion?.text === "Prefers green tea"));

    // The admin view: the tenant's events over time, counted per type.
    await page.click("#sign-out");
    await signIn(adminToken);
    await page.click("#tab-admin");
    await page.locator(".chart-wrap[data-tenant=acme]").waitFor();
    const expected = new Map();
    let pageToken = "";
    do {
      const listed = await admin.governance.listEvents({ parent: "tenants/acme", pageSize: 500, pageToken });
      for (const event of listed.events) {
        const name = `memory_${mnemo.EventType[event.type].toLowerCase().replace(/^memory_/, "")}`;
        expected.set(name, (expected.get(name) ?? 0) + 1);
      }
      pageToken = listed.nextPageToken;
    } while (pageToken !== "");
    const charted = new Map();
    for (const bar of await page.locator("#events-chart rect.bar").all()) {
      const type = await bar.getAttribute("data-type");
      charted.set(type, (charted.get(type) ?? 0) + Number(await bar.getAttribute("data-count")));
    }
    assert.deepEqual(new Map([...charted].sort()), new Map([...expected].sort()));
    assert.equal(charted.get("memory_deleted"), 1);
    for (let daysAgo = 1; daysAgo <= PAST_SAVED.length; daysAgo += 1) {
      const bucket = page.locator(`#events-chart g.bucket[data-start='${dayStart(daysAgo)}']`);
      assert.equal(await bucket.locator("rect[data-type=memory_saved]").getAttribute("data-count"), String(PAST_SAVED[daysAgo - 1]));
      assert.equal(await bucket.locator("rect[data-type=memory_recalled]").getAttribute("data-count"), String(PAST_RECALLED[daysAgo - 1]));
    }
    assert.equal(charted.get("memory_extraction_resolved"), 2);
    assert.equal(await page.locator(".legend li[data-type=memory_deleted]").getAttribute("data-count"), "1");
    await shot("admin");

    // Delete my data: the receipt, and nothing left.
    await page.click("#sign-out");
    await signIn(aliceToken);
    await page.click("#tab-privacy");
    await page.click("#delete-button");
    await page.click("#delete-confirm");
    await page.locator("#receipt").waitFor();
    assert.equal(await page.locator("#receipt tr[data-table=memories]").getAttribute("data-count"), "8");
    assert.ok(Number(await page.locator("#receipt").getAttribute("data-total")) > 5);
    await shot("privacy");
    const left = await alice.memories.listMemories({ parent: `users/${ALICE}` });
    assert.equal(left.memories.length, 0);
    await page.click("#tab-memories");
    await page.locator("table.memories[data-count='0']").waitFor();

    assert.deepEqual(pageErrors, []);
    await page.close();
    cleanups.shift();
    stopped = true;
    assert.equal(await stopMnemo(server.child), 0, `mnemo serve did not stop cleanly:\n${server.log()}`);
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
});

test("under --auth none the console signs in with a user id", { timeout: 120_000 }, async () => {
  const scratch = await mkdtemp(join(tmpdir(), "mnemo-console-none-"));
  const cleanups = [() => rm(scratch, { recursive: true, force: true })];
  try {
    const server = await startMnemo(join(scratch, "data"));
    let stopped = false;
    cleanups.unshift(() => (stopped ? undefined : stopMnemo(server.child)));
    const page = await newPage(await browserScratch);
    cleanups.unshift(() => page.close());

    await page.goto(`${server.webUrl}/console/`);
    await page.fill("#user", "carol");
    await page.click("#sign-in-button");
    await page.locator("#live[data-status=live]").waitFor();
    assert.equal(await page.textContent("#signed-in-user"), "carol");
    await page.locator("table.memories[data-loaded=true][data-count='0']").waitFor();
    await page.fill("#new-text", "Plays the cello");
    await page.check("#new-pinned");
    await page.click("#new-save");
    await page.locator("tr.memory[data-pinned=true]", { hasText: "Plays the cello" }).waitFor();
    // No tenant: the admin view shows the users without one (served on loopback).
    await page.click("#tab-admin");
    await page.locator(".chart-wrap[data-tenant='-']").waitFor();
    assert.equal(await page.locator(".legend li[data-type=memory_saved]").getAttribute("data-count"), "1");

    await page.close();
    cleanups.shift();
    stopped = true;
    assert.equal(await stopMnemo(server.child), 0, `mnemo serve did not stop cleanly:\n${server.log()}`);
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
});

/**
 * How the memory list lies in the page: the words broken across lines, the
 * parts of each entry not wholly visible (outside the viewport, or scrolled
 * out of the table's box), whether the page scrolls sideways, and the labels
 * the date cells show before their value.
 */
function memoryListLayout() {
  const box = document.querySelector("table.memories").closest(".table-scroll").getBoundingClientRect();
  const right = Math.min(window.innerWidth, box.right);
  const hidden = (element) => {
    const rect = element.getBoundingClientRect();
    return rect.width === 0 || rect.left < Math.max(0, box.left) || rect.right > right;
  };
  // A word broken across lines has a box on each line (a break after a
  // hyphen is the line's to make: "lisbon-weekend-trip" is three words here).
  const broken = [];
  const texts = document.querySelectorAll("tr.memory .text, tr.memory td.key, tr.memory td.scope, tr.memory td.event-time, tr.memory td.time, li.version");
  for (const element of texts) {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/[^\s-]+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
        if (lines.size > 1) broken.push(match[0]);
      }
    }
  }
  const offscreen = [];
  const parts = [".text", "button.pin", "td.event-time", "td.time", "button.show-history", "button.edit-button", "button.delete"];
  for (const row of document.querySelectorAll("tr.memory")) {
    for (const part of parts) {
      const element = row.querySelector(part);
      if (element === null || hidden(element)) offscreen.push(`${row.dataset.name} ${part}`);
    }
  }
  const dates = document.querySelector("tr.memory").querySelectorAll("td.event-time, td.time");
  return {
    pageFits: document.documentElement.scrollWidth <= window.innerWidth,
    broken,
    offscreen,
    labels: [...dates].map((cell) => getComputedStyle(cell, "::before").content),
  };
}

// The memory list at a phone's width (390 px, as an iPhone 12 to 15): each
// entry reads as a card, its words whole (the table once squeezed its text
// column until "Japanese." broke as "Japane se."), and every part of it on
// screen: the text, the two dates and the History, Edit and Delete buttons.
// The same holds of the table at the test's desktop width.
test("at 390 px the memory list keeps words whole and everything on screen", { timeout: 120_000 }, async () => {
  const scratch = await mkdtemp(join(tmpdir(), "mnemo-console-phone-"));
  const cleanups = [() => rm(scratch, { recursive: true, force: true })];
  try {
    const [mnemo, server] = await Promise.all([importNodeClient(scratch), startMnemo(join(scratch, "data"))]);
    let stopped = false;
    cleanups.unshift(() => (stopped ? undefined : stopMnemo(server.child)));
    const client = mnemo.createMnemoClient({ baseUrl: server.grpcUrl });
    cleanups.unshift(() => client.close());
    const parent = "users/dana";
    const at = (iso) => mnemo.timestampFromDate(new Date(iso));
    const saved = [
      { memoryId: "lang", memory: { text: "Is learning Japanese.", key: "language", pinned: true } },
      { memoryId: "job", memory: { text: "Works as a structural engineer on bridge maintenance, mostly night shifts in winter.", key: "occupation-and-schedule" } },
      { memoryId: "seat", memory: { text: "Wants a window seat", scope: mnemo.MemoryScope.CONVERSATION, conversation: `${parent}/conversations/lisbon-weekend-trip` } },
      { memoryId: "city", memory: { text: "Lives in Porto", key: "home", eventTime: at("2026-06-01T00:00:00Z") } },
      { memoryId: "city-before", memory: { text: "Lives in Lisbon", key: "home", eventTime: at("2026-01-01T00:00:00Z") } },
    ];
    for (const request of saved) await client.memories.createMemory({ parent, ...request });

    const page = await newPage(await browserScratch);
    cleanups.unshift(() => page.close());
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.webUrl}/console/`);
    await page.fill("#user", "dana");
    await page.click("#sign-in-button");
    await page.locator("table.memories[data-loaded=true][data-count='4']").waitFor();
    const checkLayout = async (what) => {
      for (const width of [390, 1180]) {
        await page.setViewportSize({ width, height: 844 });
        const layout = await page.evaluate(memoryListLayout);
        const where = `${width} px, ${what}`;
        assert.deepEqual(layout.broken, [], `${where}: words broken across lines: ${layout.broken}`);
        assert.deepEqual(layout.offscreen, [], `${where}: not wholly visible: ${layout.offscreen}`);
        assert.equal(layout.pageFits, true, `${where}: the page scrolls sideways`);
        // As cards, without the table's header, each date says what it is.
        const labels = width === 390 ? ['"Stated (UTC)"', '"Stored (UTC)"'] : ["none", "none"];
        assert.deepEqual(layout.labels, labels, where);
      }
      await page.setViewportSize({ width: 390, height: 844 });
    };
    // As of a past time: the superseded fact, with its "until" (the widest date cell).
    await page.fill("#as-of", "2026-03-01T00:00");
    await page.locator("table.memories[data-count='1']").waitFor();
    await checkLayout("as of 2026-03-01");
    // Now, with an entry's history open.
    await page.click("#as-of-clear");
    await page.locator("table.memories[data-as-of=''][data-count='4']").waitFor();
    await rowOf(page, "Lives in Porto").locator("button.show-history").click();
    await page.locator("li.version", { hasText: "Lives in Lisbon" }).waitFor();
    await checkLayout("now, a history open");
    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, "memories-phone.png"), fullPage: true });

    await page.close();
    cleanups.shift();
    client.close();
    cleanups.shift();
    stopped = true;
    assert.equal(await stopMnemo(server.child), 0, `mnemo serve did not stop cleanly:\n${server.log()}`);
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
});
