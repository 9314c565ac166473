/**
 * A live Mnemo server for the TypeScript tests: a real
 * `<repo>/.venv/bin/python -m mnemo_server serve` process on a temp SQLite
 * file and a free 127.0.0.1 port.
 *
 *     const server = await startMnemoServer();          // or { args: [...] }
 *     const mnemo = createMnemoClient({ baseUrl: server.baseUrl });
 *     ...
 *     await server.stop();     // SIGTERM; restart() brings it back on the same port
 *     await server.close();    // always, e.g. in after(): ends it, removes the temp dir
 *
 * The first start listens on port 0 and reads the bound port from the
 * server's start line ("... serving on 127.0.0.1:PORT ..."), then waits until
 * grpc.health.v1 answers SERVING; a restart asks for the same port again. Every
 * wait is bounded; a failure message carries the end of the server's log.
 * Override the interpreter with MNEMO_PYTHON.
 *
 * Starting a server costs seconds on a loaded machine, so tests that only
 * need *a* server (no stop, restart or special flags) use `sharedServer()`:
 * under the runner (dist/test/run.js, what `make test-typescript` runs) every
 * test file gets the one server it started (MNEMO_TEST_BASE_URL, and its web
 * port MNEMO_TEST_WEB_URL); a file run on its own starts its own. Such files must use user ids of their own (a
 * prefix per file), since other files write to the same server.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from "node:fs";
import * as http2 from "node:http2";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
const POLL_MS = 50;
const LOG_TAIL_CHARS = 4000;
const SERVING_ON = /mnemo \S+ serving on (\S+):(\d+) /;
const WEB_SERVING_ON = /\(web port\) serving on (\S+):(\d+)/;

/** The repository root: the nearest ancestor of this file holding pyproject.toml and server/. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "pyproject.toml")) && existsSync(join(dir, "server"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("repository root (pyproject.toml + server/) not found");
    dir = parent;
  }
}

export interface ServerOptions {
  /** Extra `serve` flags (`--listen` and `--database-url` are set here). */
  args?: readonly string[];
  /** Added to this process's environment. */
  env?: Readonly<Record<string, string>>;
  /** Also serve gRPC-Web and Connect on a second port (`--web-listen`); see webBaseUrl. */
  web?: boolean;
  /** The `--database-url` (default: a SQLite file in the temp dir), e.g. from support/postgres.ts. */
  databaseUrl?: string;
}

export class MnemoTestServer {
  /** Holds the SQLite file, the logs and any file a test writes (e.g. a key). */
  readonly dir: string;
  readonly databaseUrl: string;
  private readonly args: readonly string[];
  private readonly env: Readonly<Record<string, string>>;
  private readonly web: boolean;
  private boundWebPort = 0;
  private process: ChildProcess | undefined;
  private exited: Promise<number | null> = Promise.resolve(null);
  private logPath = "";
  private starts = 0;
  private boundPort = 0;

  constructor(options: ServerOptions = {}, dir = mkdtempSync(join(tmpdir(), "mnemo-ts-"))) {
    this.dir = dir;
    this.databaseUrl = options.databaseUrl ?? `sqlite:///${join(dir, "mnemo.db")}`;
    this.args = options.args ?? [];
    this.env = options.env ?? {};
    this.web = options.web ?? false;
  }

  /** The gRPC port of the running (or last) process. */
  get port(): number {
    if (!this.boundPort) throw new Error("the server was never started");
    return this.boundPort;
  }

  /** `http://127.0.0.1:PORT`, the facade's baseUrl for the gRPC transport. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `http://127.0.0.1:WEB_PORT` (gRPC-Web and Connect) of a server started with `web: true`. */
  get webBaseUrl(): string {
    if (!this.boundWebPort) throw new Error("the server was not started with web: true");
    return `http://127.0.0.1:${this.boundWebPort}`;
  }

  isRunning(): boolean {
    return this.process !== undefined && this.process.exitCode === null && this.process.signalCode === null;
  }

  /** Everything the current (or last) process wrote to stdout and stderr. */
  logText(): string {
    return this.logPath && existsSync(this.logPath) ? readFileSync(this.logPath, "utf8") : "";
  }

  /** Start a process and wait until it is SERVING (same port as before, if any). */
  async start(): Promise<void> {
    if (this.isRunning()) throw new Error("the server is already running");
    const line = await this.launch(this.boundPort);
    this.boundPort = Number(line[2]);
    await this.waitServing();
  }

  /** SIGTERM, wait (bounded; SIGKILL after); resolves to the exit code (0: clean). */
  async stop(): Promise<number | null> {
    const process = this.process;
    if (process === undefined) return null;
    if (this.isRunning()) {
      process.kill("SIGCONT"); // a suspended process would not act on SIGTERM
      process.kill("SIGTERM");
    }
    const timer = setTimeout(() => process.kill("SIGKILL"), STOP_TIMEOUT_MS);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL, like a crash, and wait for the exit. */
  async kill(): Promise<void> {
    if (this.isRunning()) this.process?.kill("SIGKILL");
    await this.exited;
  }

  /**
   * SIGSTOP: the process stays, its port accepts connections, nothing answers
   * (a hung server). Always `resume()` (or close()) afterwards.
   */
  suspend(): void {
    if (!this.isRunning()) throw new Error("the server is not running");
    this.process?.kill("SIGSTOP");
  }

  /** SIGCONT after suspend(). */
  resume(): void {
    if (this.isRunning()) this.process?.kill("SIGCONT");
  }

  /** Stop if running, then start again on the same database and port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** End the process if it runs and remove the temp directory. Idempotent. */
  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async launch(port: number): Promise<RegExpExecArray> {
    this.starts += 1;
    this.logPath = join(this.dir, `mnemo-serve-${this.starts}.log`);
    const python = process.env["MNEMO_PYTHON"] ?? join(repoRoot(), ".venv", "bin", "python");
    const log = openSync(this.logPath, "w");
    const child = spawn(
      python,
      [
        "-m",
        "mnemo_server",
        "serve",
        "--listen",
        `127.0.0.1:${port}`,
        "--database-url",
        this.databaseUrl,
        ...(this.web ? ["--web-listen", `127.0.0.1:${this.boundWebPort}`] : []),
        // The client's tests check what the protocol carries, not how the model ranks:
        // no embedder (so recall is lexical), unless a test asks for one.
        ...(this.args.includes("--embedder") ? [] : ["--embedder", "none"]),
        ...this.args,
      ],
      { stdio: ["ignore", log, log], env: { ...process.env, ...this.env } },
    );
    closeSync(log);
    this.process = child;
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => resolve(code ?? (signal ? -1 : null)));
      child.once("error", () => resolve(-1));
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const log = this.logText();
      const match = SERVING_ON.exec(log);
      const web = this.web ? WEB_SERVING_ON.exec(log) : null;
      if (match && (web || !this.web)) {
        if (web) this.boundWebPort = Number(web[2]);
        return match;
      }
      if (!this.isRunning()) {
        await this.exited;
        throw new Error(this.describe(`exited with ${child.exitCode ?? child.signalCode}`));
      }
      await delay(POLL_MS);
    }
    await this.stop();
    throw new Error(this.describe(`did not start within ${START_TIMEOUT_MS} ms`));
  }

  private async waitServing(): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.isRunning()) throw new Error(this.describe("exited"));
      if (await healthServing(this.baseUrl)) return;
      await delay(POLL_MS);
    }
    await this.stop();
    throw new Error(this.describe(`was not SERVING within ${START_TIMEOUT_MS} ms`));
  }

  private describe(what: string): string {
    return `mnemo serve (${this.logPath}) ${what}; its log ends with:\n${this.logText().slice(-LOG_TAIL_CHARS)}`;
  }
}

/** The environment variable naming the runner's shared server. */
export const SHARED_SERVER_ENV = "MNEMO_TEST_BASE_URL";

/** The environment variable naming the shared server's web port (gRPC-Web, Connect). */
export const SHARED_WEB_SERVER_ENV = "MNEMO_TEST_WEB_URL";

/** A server a test file uses but may not stop: close() releases it. */
export interface TestServer {
  /** The gRPC port's URL. */
  readonly baseUrl: string;
  /** The web port's URL (gRPC-Web and Connect). */
  readonly webBaseUrl: string;
  close(): Promise<void>;
}

/**
 * The runner's shared server (close() leaves it running), or, when the file
 * runs on its own, a server of its own (close() ends it).
 */
export async function sharedServer(): Promise<TestServer> {
  const baseUrl = process.env[SHARED_SERVER_ENV];
  const webBaseUrl = process.env[SHARED_WEB_SERVER_ENV];
  if (baseUrl && webBaseUrl) return { baseUrl, webBaseUrl, close: async () => {} };
  return startMnemoServer({ web: true });
}

/** Start a server (see MnemoTestServer); close() it when done. */
export async function startMnemoServer(options: ServerOptions = {}): Promise<MnemoTestServer> {
  const server = new MnemoTestServer(options);
  try {
    await server.start();
  } catch (error) {
    await server.close();
    throw error;
  }
  return server;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Whether grpc.health.v1.Health/Check answers SERVING: one raw gRPC call over
 * node:http2 (an empty HealthCheckRequest; SERVING is the message 08 01).
 */
export function healthServing(baseUrl: string, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const session = http2.connect(baseUrl);
    const finish = (serving: boolean) => {
      clearTimeout(timer);
      session.close();
      session.destroy();
      resolve(serving);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    session.on("error", () => finish(false));
    const request = session.request({
      ":method": "POST",
      ":path": "/grpc.health.v1.Health/Check",
      "content-type": "application/grpc",
      te: "trailers",
    });
    const chunks: Buffer[] = [];
    let status: string | undefined;
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("trailers", (trailers) => {
      status = String(trailers["grpc-status"]);
    });
    request.on("error", () => finish(false));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      finish(status === "0" && body.subarray(5).equals(Buffer.from([0x08, 0x01])));
    });
    request.end(Buffer.alloc(5));
  });
}

/** For tests that name the repository's files. */
export function repoPath(...parts: string[]): string {
  return resolve(repoRoot(), ...parts);
}
