/** Options of `createMnemoClient`, shared by the Node and the browser entry points. */
import type { Interceptor } from "@connectrpc/connect";
import type { RetryPolicy, TokenSource } from "./interceptors.js";

/** The default deadline of each call, in ms (the Python client's 10 s). */
export const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * - "grpc": gRPC over HTTP/2 (Node only: `@connectrpc/connect-node`), to the
 *   server's gRPC port, e.g. "http://127.0.0.1:50051".
 * - "grpc-web" and "connect": over fetch (`@connectrpc/connect-web`), for
 *   browsers, React Native and Node, to the server's web port (`--web-listen`).
 */
export type TransportKind = "grpc" | "grpc-web" | "connect";

export interface MnemoClientOptions {
  /**
   * The server's address, in any form every Mnemo client and the CLI take:
   * "127.0.0.1:50051" (plaintext), "http://127.0.0.1:50051" or
   * "https://mnemo.example.com" (TLS); the gRPC port, or the web port's.
   */
  baseUrl: string;
  /** Default "grpc" from the Node entry point, "grpc-web" from the browser one. */
  transport?: TransportKind;
  /** Sent as `authorization: Bearer <token>`; a function is asked before each attempt. */
  token?: TokenSource;
  /**
   * The default deadline of each call, in ms; a call's own `{ timeoutMs }`
   * overrides it. Default 10 000; 0 or null: no deadline.
   */
  timeoutMs?: number | null;
  /** Retries of UNAVAILABLE (see RetryPolicy); `{ maxAttempts: 1 }` switches them off. */
  retry?: Partial<RetryPolicy>;
  /**
   * Give every write that has a `requestId` field and none set a fresh uuid,
   * so a retried write is applied at most once. Default true.
   */
  autoRequestIds?: boolean;
  /** Extra headers (gRPC metadata) sent with every call. */
  headers?: Readonly<Record<string, string>>;
  /** Extra Connect interceptors, run innermost (after ours, on each attempt). */
  interceptors?: readonly Interceptor[];
  /** grpc-web/connect only: the fetch to use (default globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
}

/**
 * `baseUrl` as a URL: "host:port" becomes "http://host:port"; a trailing "/"
 * goes. Throws a TypeError for a URL with a path (a server is an address).
 */
export function baseUrlOf(options: MnemoClientOptions): string {
  const given = options.baseUrl.trim();
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? given : `http://${given}`;
  const parsed = new URL(url);
  if (parsed.pathname !== "/" || parsed.search || parsed.hash) {
    throw new TypeError(`${given}: give the server's address, as host:port or http://host:port`);
  }
  return url.replace(/\/+$/, "");
}

/** `timeoutMs` as Connect's `defaultTimeoutMs` (undefined: no deadline). */
export function defaultTimeoutMs(options: MnemoClientOptions): number | undefined {
  const value = options.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : options.timeoutMs;
  return value === null || value <= 0 ? undefined : value;
}
