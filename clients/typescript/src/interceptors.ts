/**
 * The facade's behaviour as Connect interceptors, the same over every
 * transport: request ids, retries of UNAVAILABLE, the bearer token and headers
 * (`facadeInterceptors` puts them in the order they must run in). Errors
 * become MnemoError in client.ts.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { clone, type DescField } from "@bufbuild/protobuf";

/** A bearer token, or a function asked before each attempt (so it can refresh). */
export type TokenSource = string | (() => string | Promise<string>);

/** How UNAVAILABLE is retried; mirrors the Python client's gRPC service config. */
export interface RetryPolicy {
  /** Attempts per call, the first included (1: no retries). Default 5. */
  maxAttempts: number;
  /** The first backoff ceiling, in ms. Default 100. */
  initialBackoffMs: number;
  /** The largest backoff ceiling, in ms. Default 2000. */
  maxBackoffMs: number;
  /** Growth of the ceiling per attempt. Default 2. */
  backoffMultiplier: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  initialBackoffMs: 100,
  maxBackoffMs: 2000,
  backoffMultiplier: 2,
});

/** The field every write request that can be replayed carries. */
const REQUEST_ID_FIELD = "request_id";

/**
 * A unary request with an empty `request_id` gets a fresh uuid, once per call,
 * so every retry of the call (and nothing else) carries the same id and the
 * server applies the write at most once. A request_id the caller set is kept.
 */
export const requestIdInterceptor: Interceptor = (next) => async (req) => {
  if (req.stream) return next(req);
  const field = requestIdField(req.method.input.fields);
  if (field === undefined || (req.message as Record<string, unknown>)[field.localName] !== "") {
    return next(req);
  }
  // A copy: the caller may have passed a message object it sends again later.
  const message = clone(req.method.input, req.message);
  (message as Record<string, unknown>)[field.localName] = newRequestId();
  return next({ ...req, message });
};

function requestIdField(fields: readonly DescField[]): DescField | undefined {
  return fields.find((f) => f.name === REQUEST_ID_FIELD && f.fieldKind === "scalar");
}

/** A uuid4 from Web Crypto (Node 20, browsers in secure contexts, React Native with a polyfill). */
export function newRequestId(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * Retries unary calls that fail with UNAVAILABLE, with exponential backoff and
 * full jitter, within the call's deadline (its abort signal). Streaming calls
 * are not retried: their request stream cannot be replayed.
 */
export function retryInterceptor(policy: RetryPolicy): Interceptor {
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be a positive integer, not ${policy.maxAttempts}`);
  }
  return (next) => async (req) => {
    if (req.stream) return next(req);
    let ceiling = policy.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (error) {
        const code = ConnectError.from(error).code;
        if (code !== Code.Unavailable || attempt >= policy.maxAttempts || req.signal.aborted) {
          throw error;
        }
      }
      await sleep(Math.random() * ceiling, req.signal);
      ceiling = Math.min(ceiling * policy.backoffMultiplier, policy.maxBackoffMs);
    }
  };
}

/** Resolves after `ms`, or as soon as `signal` aborts (the next attempt then fails at once). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Sends `authorization: Bearer <token>` on every attempt (a function is asked each time). */
export function authInterceptor(token: TokenSource): Interceptor {
  return (next) => async (req) => {
    const value = typeof token === "function" ? await token() : token;
    if (value) req.header.set("authorization", `Bearer ${value}`);
    return next(req);
  };
}

/** Sends fixed headers (gRPC metadata) on every call. */
export function headersInterceptor(headers: Readonly<Record<string, string>>): Interceptor {
  const entries = Object.entries(headers);
  return (next) => async (req) => {
    for (const [name, value] of entries) req.header.set(name, value);
    return next(req);
  };
}

export interface FacadeInterceptorOptions {
  token?: TokenSource | undefined;
  headers?: Readonly<Record<string, string>> | undefined;
  retry: RetryPolicy;
  autoRequestIds: boolean;
  extra: readonly Interceptor[];
}

/**
 * Outermost first: a request id is set once before the retries, and the token
 * and headers are set on each attempt.
 */
export function facadeInterceptors(options: FacadeInterceptorOptions): Interceptor[] {
  const chain: Interceptor[] = [];
  if (options.autoRequestIds) chain.push(requestIdInterceptor);
  chain.push(retryInterceptor(options.retry));
  if (options.headers !== undefined) chain.push(headersInterceptor(options.headers));
  if (options.token !== undefined) chain.push(authInterceptor(options.token));
  chain.push(...options.extra);
  return chain;
}
