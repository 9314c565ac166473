/**
 * A throwaway PostgreSQL for the TypeScript tests, made and driven by the
 * Python test support (`python -m tests.support.postgres_service`): a
 * migrated database whose URL a MnemoTestServer takes as `databaseUrl`, and
 * `killBackends()` to terminate every backend of the servers on it.
 *
 *     const pg = await startPostgres();
 *     const server = await startMnemoServer({ databaseUrl: pg.url });
 *     await pg.killBackends();
 *     ...
 *     await pg.close();     // stops and deletes the cluster
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import { join } from "node:path";
import { repoRoot } from "./server.js";

const START_TIMEOUT_MS = 120_000;
const ANSWER_TIMEOUT_MS = 30_000;

export class ThrowawayPostgres {
  private constructor(
    private readonly child: ChildProcess,
    private readonly lines: AsyncIterator<string>,
    private readonly reader: Interface,
    /** The migrated database's SQLAlchemy URL (`postgresql+psycopg://...`). */
    readonly url: string,
  ) {}

  static async start(): Promise<ThrowawayPostgres> {
    const python = process.env["MNEMO_PYTHON"] ?? join(repoRoot(), ".venv", "bin", "python");
    const child = spawn(python, ["-m", "tests.support.postgres_service"], {
      cwd: repoRoot(),
      stdio: ["pipe", "pipe", "inherit"],
    });
    const reader = createInterface({ input: child.stdout! });
    const lines = reader[Symbol.asyncIterator]();
    try {
      const { url } = (await answer(lines, START_TIMEOUT_MS)) as { url: string };
      return new ThrowawayPostgres(child, lines, reader, url);
    } catch (error) {
      child.kill("SIGTERM");
      throw error;
    }
  }

  /** Terminates every other client backend of the database; how many. */
  async killBackends(): Promise<number> {
    this.child.stdin!.write("kill-backends\n");
    const { killed } = (await answer(this.lines, ANSWER_TIMEOUT_MS)) as { killed: number };
    return killed;
  }

  /** Stops and deletes the cluster (the helper exits at the end of its stdin). */
  async close(): Promise<void> {
    const exited = new Promise<void>((resolve) => {
      if (this.child.exitCode !== null) resolve();
      else this.child.once("exit", () => resolve());
    });
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), ANSWER_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
    this.reader.close();
  }
}

async function answer(lines: AsyncIterator<string>, timeoutMs: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the PostgreSQL helper in ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const next = await Promise.race([lines.next(), timeout]);
    if (next.done) throw new Error("the PostgreSQL helper exited (its stderr is above)");
    return JSON.parse(next.value) as unknown;
  } finally {
    clearTimeout(timer);
  }
}

export function startPostgres(): Promise<ThrowawayPostgres> {
  return ThrowawayPostgres.start();
}
