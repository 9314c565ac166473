// What the browser tests share: a live `mnemo serve`, Debian's chromium through
// playwright-core, and modules of the TypeScript client bundled with esbuild.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const TS_DIR = join(ROOT, "clients/typescript");
const requireFromClient = createRequire(join(TS_DIR, "package.json"));
export const esbuild = requireFromClient("esbuild");
const { chromium } = requireFromClient("playwright-core");

const CHROMIUM = process.env.MNEMO_CHROMIUM ?? "/usr/bin/chromium";
export const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/**
 * `mnemo serve` with the web port and `extraArgs`; resolves once it logs both
 * ports' addresses, with `webUrl` and `grpcUrl`.
 */
export async function startMnemo(dataDir, extraArgs = []) {
  const child = spawn(
    join(ROOT, ".venv/bin/python"),
    [
      "-m", "mnemo_server", "serve",
      "--listen", "127.0.0.1:0",
      "--web-listen", "127.0.0.1:0",
      "--data-dir", dataDir,
      "--grace-period-seconds", "2",
      // The pages' tests check what they show, not how the model ranks: no
      // embedder (so recall is lexical), unless a test asks for one.
      ...(extraArgs.includes("--embedder") ? [] : ["--embedder", "none"]),
      ...extraArgs,
    ],
    { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  const urls = await new Promise((resolveUrls, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ports after ${START_TIMEOUT_MS} ms:\n${log}`)), START_TIMEOUT_MS);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const web = /web port\) serving on (\S+):(\d+)/.exec(log);
      const grpc = /\d serving on (\S+):(\d+) \(store/.exec(log);
      if (web && grpc) {
        clearTimeout(timer);
        resolveUrls({ webUrl: `http://${web[1]}:${web[2]}`, grpcUrl: `http://${grpc[1]}:${grpc[2]}` });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`mnemo serve exited with ${code}:\n${log}`));
    });
  });
  return { child, ...urls, log: () => log };
}

/** SIGTERM, then the exit code (SIGKILL and a failure if it does not stop in time). */
export async function stopMnemo(child) {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise((done) => child.once("exit", (code) => done(code)));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

export async function launchChromium(userDataDir, options = {}) {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    timeout: START_TIMEOUT_MS,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    ...options,
  });
}

/** The TypeScript client's Node entry point (src/index.ts), bundled into `outDir` and imported. */
export async function importNodeClient(outDir) {
  const outfile = join(outDir, "mnemo-client.mjs");
  await esbuild.build({
    entryPoints: [join(TS_DIR, "src/index.ts")],
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    outfile,
    logLevel: "warning",
  });
  return import(pathToFileURL(outfile).href);
}
