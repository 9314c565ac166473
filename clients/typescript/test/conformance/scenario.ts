/**
 * The language-neutral part of the TypeScript conformance runner: loading
 * scenario files, placeholders, save paths and the `expect` matcher, as
 * tests/conformance/README.md specifies them (the Python runner,
 * tests/conformance/run.py, is the same logic).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** One step did not do what its scenario says; the message says why. */
export class StepFailed extends Error {
  override readonly name = "StepFailed";
}

export interface Scenario {
  /** The path below the scenarios folder without `.json`, e.g. `history/compaction`. */
  readonly id: string;
  readonly data: JsonObject;
}

/** Every `*.json` under the given folders (or the files), in sorted id order. */
export function loadScenarios(paths: readonly string[], scenariosRoot: string): Scenario[] {
  const files: string[] = [];
  for (const path of paths) {
    if (statSync(path).isDirectory()) files.push(...jsonFiles(path));
    else files.push(path);
  }
  return files
    .map((file) => ({ id: scenarioId(file, scenariosRoot), file }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map(({ id, file }) => ({ id, data: JSON.parse(readFileSync(file, "utf8")) as JsonObject }));
}

function jsonFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return jsonFiles(path);
    return entry.name.endsWith(".json") ? [path] : [];
  });
}

function scenarioId(file: string, root: string): string {
  const rel = relative(resolve(root), resolve(file));
  const inside = !rel.startsWith("..") && !rel.startsWith(sep);
  const name = inside ? rel : (resolve(file).split(sep).pop() ?? file);
  return name.split(sep).join("/").replace(/\.json$/, "");
}

export type StepForm = "call" | "open" | "receive" | "close";

/** The form of a step; a step with more than one form fails. */
export function stepForm(step: JsonObject): StepForm {
  const forms: string[] = ["open", "receive", "close"].filter((name) => name in step);
  if ("method" in step && forms.length > 0 && !(forms.length === 1 && forms[0] === "open")) {
    forms.unshift("method");
  }
  if (forms.length > 1) throw new StepFailed(`a step has one form, this one has ${forms.join(", ")}`);
  if (forms.length === 1) return forms[0] as StepForm;
  if (!("method" in step)) throw new StepFailed("a step needs method, open, receive or close");
  return "call";
}

// ------------------------------------------------------------ placeholders

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const WHOLE_PLACEHOLDER = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** `value` with every `${name}` in its strings replaced (object keys are left as they are). */
export function substitute(value: Json, variables: ReadonlyMap<string, Json>): Json {
  if (typeof value === "string") {
    const whole = WHOLE_PLACEHOLDER.exec(value);
    if (whole) return variable(whole[1] ?? "", variables);
    return value.replace(PLACEHOLDER, (_, name: string) => text(variable(name, variables)));
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, variables));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, variables)]));
  }
  return value;
}

function variable(name: string, variables: ReadonlyMap<string, Json>): Json {
  if (!variables.has(name)) throw new StepFailed(`unknown placeholder \${${name}}`);
  return variables.get(name) as Json;
}

function text(value: Json): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The value at a dot-separated `path` (field names, 0-based indices); absent fails. */
export function lookup(value: Json, path: string): Json {
  let current: Json = value;
  for (const part of path.split(".")) {
    if (Array.isArray(current) && /^\d+$/.test(part) && Number(part) < current.length) {
      current = current[Number(part)] as Json;
    } else if (isObject(current) && Object.hasOwn(current, part)) {
      current = current[part] as Json;
    } else {
      throw new StepFailed(`save: no '${path}' in the response ${short(value)}`);
    }
  }
  return current;
}

// ----------------------------------------------------------------- matching

/** A key that is not in the actual object. */
export const ABSENT = Symbol("absent");
type Actual = Json | typeof ABSENT;

const COMPARISONS: Record<string, (a: number, b: number) => boolean> = {
  $gt: (a, b) => a > b,
  $gte: (a, b) => a >= b,
  $lt: (a, b) => a < b,
  $lte: (a, b) => a <= b,
};

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function matcherName(expected: Json): string | undefined {
  if (!isObject(expected)) return undefined;
  const keys = Object.keys(expected);
  return keys.length === 1 && keys[0]?.startsWith("$") ? keys[0] : undefined;
}

/** Why `actual` does not match `expected`, or undefined when it does (README "Matching expect"). */
export function mismatch(expected: Json, actual: Actual, path = ""): string | undefined {
  const where = path || "response";
  const matcher = matcherName(expected);
  if (matcher !== undefined) return matchWith(matcher, (expected as JsonObject)[matcher] as Json, actual, where);
  if (expected === null) return actual === ABSENT ? undefined : `${where}: expected absent, got ${short(actual)}`;
  if (actual === ABSENT) return `${where}: missing (expected ${short(expected)})`;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${where}: expected an array, got ${short(actual)}`;
    if (actual.length !== expected.length) {
      return `${where}: expected ${expected.length} elements, got ${actual.length}: ${short(actual)}`;
    }
    for (const [index, item] of expected.entries()) {
      const why = mismatch(item, actual[index] as Json, path ? `${path}.${index}` : String(index));
      if (why) return why;
    }
    return undefined;
  }
  if (isObject(expected)) {
    if (!isObject(actual)) return `${where}: expected an object, got ${short(actual)}`;
    for (const [key, item] of Object.entries(expected)) {
      const got = Object.hasOwn(actual, key) ? (actual[key] as Json) : ABSENT;
      const why = mismatch(item, got, path ? `${path}.${key}` : key);
      if (why) return why;
    }
    return undefined;
  }
  return scalarEqual(expected, actual) ? undefined : `${where}: expected ${short(expected)}, got ${short(actual)}`;
}

const NUMERIC = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

function asNumber(value: Actual): number | undefined {
  if (typeof value === "number") return value;
  if (typeof value === "string" && NUMERIC.test(value)) return Number(value);
  return undefined;
}

/** Equal scalars; a string and a number are equal when they are the same number. */
export function scalarEqual(expected: Json, actual: Actual): boolean {
  if (typeof expected === "boolean" || typeof actual === "boolean") return expected === actual;
  if (typeof expected === "number" || typeof actual === "number") {
    const a = asNumber(expected);
    const b = asNumber(actual);
    return a !== undefined && b !== undefined && a === b;
  }
  return expected === actual;
}

function matchWith(name: string, argument: Json, actual: Actual, where: string): string | undefined {
  if (name === "$any") return actual !== ABSENT ? undefined : `${where}: missing (expected a value)`;
  if (name === "$len") {
    const items = actual === ABSENT ? [] : actual;
    if (!Array.isArray(items)) return `${where}: expected an array, got ${short(actual)}`;
    return items.length === argument ? undefined : `${where}: expected ${String(argument)} elements, got ${items.length}`;
  }
  const compare = COMPARISONS[name];
  if (compare !== undefined) {
    const number = asNumber(actual);
    if (number === undefined) return `${where}: expected a number ${name} ${String(argument)}, got ${short(actual)}`;
    return compare(number, Number(argument)) ? undefined : `${where}: ${short(actual)} is not ${name} ${String(argument)}`;
  }
  if (name === "$ne") {
    if (actual !== ABSENT && mismatch(argument, actual, where) === undefined) {
      return `${where}: expected anything but ${short(argument)}`;
    }
    return undefined;
  }
  if (name === "$contains") {
    return typeof actual === "string" && actual.includes(String(argument))
      ? undefined
      : `${where}: expected a string containing '${String(argument)}', got ${short(actual)}`;
  }
  if (name === "$some") {
    if (!Array.isArray(actual)) return `${where}: expected an array, got ${short(actual)}`;
    return actual.some((item) => mismatch(argument, item, where) === undefined)
      ? undefined
      : `${where}: no element matches ${short(argument)} in ${short(actual)}`;
  }
  return `${where}: unknown matcher ${name}`;
}

export function short(value: Actual, limit = 300): string {
  if (value === ABSENT) return "(absent)";
  const json = JSON.stringify(value);
  return json.length <= limit ? json : `${json.slice(0, limit - 3)}...`;
}
