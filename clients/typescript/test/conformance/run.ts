/**
 * The TypeScript conformance runner: every scenario of
 * tests/conformance/scenarios against one live server, dispatched by method
 * name through the generated protobuf-es registry (src/gen) with fromJson /
 * toJson, over Connect's gRPC transport (@connectrpc/connect-node), as the
 * facade does; no per-method code. The format is tests/conformance/README.md.
 *
 *     MNEMO_TARGET=127.0.0.1:50051 node clients/typescript/dist/test/conformance/run.js
 *     node clients/typescript/dist/test/conformance/run.js --target 127.0.0.1:50051 [FOLDER_OR_FILE...]
 *
 * Prints `ok <id>` or `FAIL <id>: step N: <why>` per scenario, then
 * `conformance typescript: P passed, F failed`; exits 1 when anything failed.
 */
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  createRegistry,
  fromJson,
  toJson,
  type DescFile,
  type DescMethod,
  type JsonValue,
  type Message,
  type Registry,
} from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import { toMnemoError } from "../../src/errors.js";
import { repoRoot } from "../support/server.js";
import {
  StepFailed,
  loadScenarios,
  lookup,
  mismatch,
  short,
  stepForm,
  substitute,
  type Json,
  type JsonObject,
  type Scenario,
} from "./scenario.js";

const LANGUAGE = "typescript";
const CALL_TIMEOUT_MS = 10_000;
const RECEIVE_TIMEOUT_MS = 10_000;
/** An open stream (a watch) is bounded too, so a scenario can never hang. */
const OPEN_STREAM_TIMEOUT_MS = 60_000;

/** Every file of src/gen/mnemo/v1, found by listing it (no list to keep up to date). */
async function loadRegistry(): Promise<Registry> {
  const dir = fileURLToPath(new URL("../../src/gen/mnemo/v1/", import.meta.url));
  const files: DescFile[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith("_pb.js")).sort()) {
    const module = (await import(pathToFileURL(join(dir, name)).href)) as Record<string, unknown>;
    for (const value of Object.values(module)) {
      if (typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "file") {
        files.push(value as DescFile);
      }
    }
  }
  return createRegistry(...files);
}

/** `mnemo.v1.Service/Method` -> its descriptor. */
function findMethod(registry: Registry, fullName: string): DescMethod {
  const [serviceName, methodName, ...rest] = fullName.split("/");
  const service = serviceName ? registry.getService(serviceName) : undefined;
  const method = service?.methods.find((m) => m.name === methodName);
  if (rest.length > 0 || method === undefined) throw new StepFailed(`unknown method ${fullName}`);
  return method;
}

/** A failed call: its code's gRPC name, ErrorInfo reason and BadRequest fields. */
interface CallError {
  readonly code: string;
  readonly reason: string;
  readonly fields: readonly string[];
  readonly message: string;
}

function callError(error: unknown): CallError {
  const mnemo = toMnemoError(error);
  return {
    // Connect spells gRPC's CANCELLED "Canceled".
    code: mnemo.codeName === "CANCELED" ? "CANCELLED" : mnemo.codeName,
    reason: mnemo.reason,
    fields: mnemo.fieldViolations.map((v) => v.field),
    message: mnemo.rawMessage,
  };
}

function describeError(error: CallError): string {
  const fields = error.fields.length > 0 ? ` fields ${JSON.stringify(error.fields)}` : "";
  return `${error.code} ${error.reason || "(no reason)"}${fields}: ${error.message.slice(0, 200)}`;
}

function errorMismatch(expected: JsonObject, got: CallError): string | undefined {
  if (got.code !== expected["code"]) return `expected ${String(expected["code"])}, got ${describeError(got)}`;
  if ("reason" in expected && got.reason !== expected["reason"]) {
    return `expected reason ${String(expected["reason"])}, got ${describeError(got)}`;
  }
  const wanted = (expected["fieldViolations"] ?? []) as string[];
  const missing = wanted.filter((field) => !got.fields.includes(field));
  if (missing.length > 0) return `expected field violations ${JSON.stringify(missing)}, got ${describeError(got)}`;
  return undefined;
}

type AnyCall = (request: unknown, options: { timeoutMs?: number; signal?: AbortSignal }) => unknown;

/** One transport (its own HTTP/2 connection) that calls any method by its descriptor. */
class Client {
  private readonly sessions: Http2SessionManager;
  private readonly transport: Transport;

  constructor(
    target: string,
    private readonly registry: Registry,
  ) {
    const baseUrl = `http://${target}`;
    this.sessions = new Http2SessionManager(baseUrl);
    this.transport = createGrpcTransport({ baseUrl, sessionManager: this.sessions });
  }

  private callable(method: DescMethod): AnyCall {
    const client = createClient(method.parent, this.transport) as unknown as Record<string, AnyCall>;
    const call = client[method.localName];
    if (call === undefined) throw new StepFailed(`no client method for ${method.name}`);
    return call;
  }

  toJson(method: DescMethod, message: Message): Json {
    return toJson(method.output, message, { registry: this.registry }) as Json;
  }

  /** One call read to its end: a message, or the array of a server stream's. */
  async call(method: DescMethod, requests: Message[]): Promise<Json> {
    const call = this.callable(method);
    const options = { timeoutMs: CALL_TIMEOUT_MS };
    switch (method.methodKind) {
      case "unary":
        return this.toJson(method, (await call(requests[0], options)) as Message);
      case "client_streaming":
        return this.toJson(method, (await call(fromArray(requests), options)) as Message);
      case "server_streaming": {
        const received: Json[] = [];
        for await (const message of call(requests[0], options) as AsyncIterable<Message>) {
          received.push(this.toJson(method, message));
        }
        return received;
      }
      default:
        throw new StepFailed(`${method.name}: ${method.methodKind} calls are not supported`);
    }
  }

  open(method: DescMethod, request: Message): Stream {
    if (method.methodKind !== "server_streaming") {
      throw new StepFailed(`open needs a server-streaming method, not ${method.name}`);
    }
    const abort = new AbortController();
    const messages = this.callable(method)(request, {
      timeoutMs: OPEN_STREAM_TIMEOUT_MS,
      signal: abort.signal,
    }) as AsyncIterable<Message>;
    return new Stream(messages, abort, (message) => this.toJson(method, message));
  }

  close(): void {
    this.sessions.abort();
  }
}

async function* fromArray(requests: Message[]): AsyncIterable<Message> {
  for (const request of requests) yield request;
}

type Item = { kind: "message"; json: Json } | { kind: "end" } | { kind: "error"; error: CallError };

/** An open server stream, read in the background into a queue. */
class Stream {
  private readonly items: Item[] = [];
  private wake: (() => void) | undefined;
  private readonly done: Promise<void>;

  constructor(
    messages: AsyncIterable<Message>,
    private readonly abort: AbortController,
    convert: (message: Message) => Json,
  ) {
    this.done = (async () => {
      try {
        for await (const message of messages) this.push({ kind: "message", json: convert(message) });
        this.push({ kind: "end" });
      } catch (error) {
        this.push({ kind: "error", error: callError(error) });
      }
    })();
  }

  private push(item: Item): void {
    this.items.push(item);
    this.wake?.();
  }

  private async next(deadline: number): Promise<Item | undefined> {
    while (this.items.length === 0) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return this.items.shift();
  }

  /** The first message matching `expected` (others are discarded). */
  async receive(expected: Json, timeoutMs: number): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    let last = "nothing";
    for (;;) {
      const item = await this.next(deadline);
      if (item === undefined) throw new StepFailed(`no matching message within ${timeoutMs / 1000}s (last: ${last})`);
      if (item.kind === "end") throw new StepFailed(`the stream ended before a matching message (last: ${last})`);
      if (item.kind === "error") {
        throw new StepFailed(`the stream failed before a matching message: ${describeError(item.error)}`);
      }
      const why = mismatch(expected, item.json);
      if (why === undefined) return item.json;
      last = why;
    }
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.done;
  }
}

/** The state of one scenario: its variables, clients and open streams. */
class ScenarioRun {
  readonly variables: Map<string, Json>;
  private readonly clients = new Map<string, Client>();
  private readonly streams = new Map<string, Stream>();

  constructor(
    private readonly target: string,
    users: Readonly<Record<string, string>>,
    private readonly registry: Registry,
  ) {
    this.variables = new Map(Object.entries(users));
  }

  private client(name: Json | undefined): Client {
    const key = name ?? "a";
    if (key !== "a" && key !== "b") throw new StepFailed(`client must be "a" or "b", not ${short(key)}`);
    let client = this.clients.get(key);
    if (client === undefined) {
      client = new Client(this.target, this.registry);
      this.clients.set(key, client);
    }
    return client;
  }

  private requests(method: DescMethod, step: JsonObject): Message[] {
    const raw = "requests" in step ? step["requests"] : [step["request"] ?? {}];
    const filled = substitute(raw as Json, this.variables);
    if (!Array.isArray(filled)) throw new StepFailed("requests is an array");
    return filled.map((item) => {
      try {
        return fromJson(method.input, item as JsonValue, { registry: this.registry });
      } catch (error) {
        throw new StepFailed(`request is not a ${method.input.typeName}: ${String(error)}`);
      }
    });
  }

  private stream(name: Json | undefined): Stream {
    const stream = this.streams.get(String(name));
    if (stream === undefined) throw new StepFailed(`no open stream '${String(name)}'`);
    return stream;
  }

  private save(step: JsonObject, got: Json): void {
    for (const [name, path] of Object.entries((step["save"] ?? {}) as JsonObject)) {
      this.variables.set(name, lookup(got, String(path)));
    }
  }

  async runStep(step: JsonObject): Promise<void> {
    const form = stepForm(step);
    if (form === "call") {
      const method = findMethod(this.registry, String(step["method"]));
      const expect = substitute(step["expect"] ?? {}, this.variables) as JsonObject;
      let got: Json;
      try {
        got = await this.client(step["client"]).call(method, this.requests(method, step));
      } catch (error) {
        if (error instanceof StepFailed) throw error;
        const failure = callError(error);
        if (!("error" in expect)) throw new StepFailed(`${String(step["method"])} failed: ${describeError(failure)}`);
        const why = errorMismatch(expect["error"] as JsonObject, failure);
        if (why) throw new StepFailed(why);
        return;
      }
      if ("error" in expect) {
        const code = (expect["error"] as JsonObject)["code"];
        throw new StepFailed(`expected ${String(code)}, but the call succeeded: ${short(got)}`);
      }
      if ("response" in expect) {
        const why = mismatch(expect["response"] as Json, got);
        if (why) throw new StepFailed(why);
      }
      this.save(step, got);
    } else if (form === "open") {
      const method = findMethod(this.registry, String(step["method"]));
      const name = String(step["open"]);
      if (this.streams.has(name)) throw new StepFailed(`stream '${name}' is already open`);
      const [request] = this.requests(method, step);
      this.streams.set(name, this.client(step["client"]).open(method, request as Message));
    } else if (form === "receive") {
      const expect = substitute(step["expect"] ?? {}, this.variables) as JsonObject;
      const got = await this.stream(step["receive"]).receive(expect["response"] ?? {}, RECEIVE_TIMEOUT_MS);
      this.save(step, got);
    } else {
      await this.stream(step["close"]).close();
      this.streams.delete(String(step["close"]));
    }
  }

  async close(): Promise<void> {
    for (const stream of this.streams.values()) await stream.close();
    for (const client of this.clients.values()) client.close();
  }
}

export function usersFor(runId: string, index: number): Record<string, string> {
  const user = `conf-${LANGUAGE}-${runId}-${index}`;
  return { user, other_user: `${user}-b` };
}

/** Run one scenario: undefined when it passed, else `step N: why` (1-based). */
export async function runScenario(
  scenario: Scenario,
  target: string,
  users: Readonly<Record<string, string>>,
  registry: Registry,
): Promise<string | undefined> {
  const run = new ScenarioRun(target, users, registry);
  let number = 0;
  try {
    const steps = (scenario.data["steps"] ?? []) as JsonObject[];
    for (const [index, step] of steps.entries()) {
      number = index + 1;
      await run.runStep(step);
    }
    return undefined;
  } catch (error) {
    const why = error instanceof StepFailed ? error.message : `${String(error)}`;
    return `step ${number}: ${why}`;
  } finally {
    await run.close();
  }
}

function parseArgs(argv: readonly string[]): { target: string; paths: string[] } {
  let target = process.env["MNEMO_TARGET"] ?? "";
  const paths: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--target") target = argv[++i] ?? "";
    else if (arg.startsWith("--target=")) target = arg.slice("--target=".length);
    else paths.push(arg);
  }
  return { target, paths };
}

async function main(): Promise<number> {
  const { target, paths } = parseArgs(process.argv.slice(2));
  if (!target) {
    console.error("usage: run.js [--target HOST:PORT] [FOLDER_OR_FILE...] (or set MNEMO_TARGET)");
    return 2;
  }
  const scenariosRoot = join(repoRoot(), "tests", "conformance", "scenarios");
  const registry = await loadRegistry();
  const scenarios = loadScenarios(paths.length > 0 ? paths : [scenariosRoot], scenariosRoot);
  const runId = randomBytes(4).toString("hex");
  let failed = 0;
  for (const [index, scenario] of scenarios.entries()) {
    const why = await runScenario(scenario, target, usersFor(runId, index), registry);
    if (why === undefined) {
      console.log(`ok ${scenario.id}`);
    } else {
      failed++;
      console.log(`FAIL ${scenario.id}: ${why}`);
    }
  }
  console.log(`conformance ${LANGUAGE}: ${scenarios.length - failed} passed, ${failed} failed`);
  return failed > 0 || scenarios.length === 0 ? 1 : 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exit(await main());
}
