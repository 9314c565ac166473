/** How the adapters read a failed call (every facade call rejects with a MnemoError). */

import { Code } from "@connectrpc/connect";
import { MnemoError } from "../errors.js";

/** Whether `error` is a MnemoError with this ErrorInfo reason. */
export function hasReason(error: unknown, reason: string): boolean {
  return error instanceof MnemoError && error.reason === reason;
}

/** Whether `error` is a MnemoError with this status code. */
export function hasCode(error: unknown, code: Code): boolean {
  return error instanceof MnemoError && error.code === code;
}

/**
 * Whether the call failed for want of a server rather than by its answer: the
 * server could not be reached or did not answer in time (after the facade's
 * own retries of UNAVAILABLE), or asked to be retried. The same call may
 * succeed later; anything else is the server's considered refusal.
 */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof MnemoError)) return false;
  switch (error.code) {
    case Code.Unavailable:
    case Code.DeadlineExceeded:
      return true;
    case Code.Aborted:
      return error.reason === "CONCURRENT_MODIFICATION";
    case Code.ResourceExhausted:
      return error.reason === "RATE_LIMITED";
    case Code.Unknown:
    case Code.Internal:
      // A transport failure (a reset connection) carries no Mnemo reason.
      return error.reason === "";
    default:
      return false;
  }
}

/** Attempts and backoff of an adapter's own retries of a write (on top of the facade's). */
export interface WriteRetry {
  /** Attempts, the first included. Default 3. */
  attempts: number;
  /** The first pause, in ms, doubled after each attempt. Default 200. */
  backoffMs: number;
}

export const DEFAULT_WRITE_RETRY: Readonly<WriteRetry> = Object.freeze({
  attempts: 3,
  backoffMs: 200,
});

/**
 * Runs `write` until it succeeds, it fails with a non-transient error, or the
 * attempts are spent. `write` must be safe to repeat: every adapter write that
 * goes through here carries a fixed request id or is idempotent by nature.
 */
export async function withRetries<T>(retry: WriteRetry, write: () => Promise<T>): Promise<T> {
  let pause = retry.backoffMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (!isTransient(error) || attempt >= retry.attempts) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause *= 2;
  }
}
