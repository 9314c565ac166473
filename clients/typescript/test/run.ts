/**
 * The test runner of `make test-typescript`: starts one Mnemo server shared by
 * the test files (see sharedServer in support/server.ts), runs
 * `node --test` over the compiled test files, ends the server, and exits with
 * node --test's exit code.
 *
 *     node dist/test/run.js                  # every dist/test/**\/*.test.js
 *     node dist/test/run.js dist/test/x.test.js ...
 */
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { SHARED_SERVER_ENV, SHARED_WEB_SERVER_ENV, startMnemoServer } from "./support/server.js";

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === "support" ? [] : testFiles(path);
      return entry.name.endsWith(".test.js") ? [path] : [];
    })
    .sort();
}

const given = process.argv.slice(2);
const files = given.length > 0 ? given : testFiles(fileURLToPath(new URL(".", import.meta.url)));
const server = await startMnemoServer({ web: true });
let exitCode = 1;
try {
  const child = spawn(
    process.execPath,
    ["--test", ...files.map((file) => relative(process.cwd(), file))],
    {
      stdio: "inherit",
      env: {
        ...process.env,
        [SHARED_SERVER_ENV]: server.baseUrl,
        [SHARED_WEB_SERVER_ENV]: server.webBaseUrl,
      },
    },
  );
  const ended = new Promise<number>((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => child.kill(signal));
  }
  exitCode = await ended;
} finally {
  await server.close();
}
process.exit(exitCode);
