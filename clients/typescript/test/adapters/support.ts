/** What the adapter tests share: a write recorder, a lost-response fault, bounded waiting. */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/** One request that reached the transport (one per attempt). */
export interface SentRequest {
  method: string;
  message: Record<string, unknown>;
}

/** An innermost interceptor recording every unary request sent, attempts included. */
export function requestRecorder(): { sent: SentRequest[]; interceptor: Interceptor; methods(): string[] } {
  const sent: SentRequest[] = [];
  const interceptor: Interceptor = (next) => async (req) => {
    if (!req.stream) {
      sent.push({ method: req.method.name, message: { ...(req.message as unknown as Record<string, unknown>) } });
    }
    return next(req);
  };
  return { sent, interceptor, methods: () => sent.map((s) => s.method) };
}

/**
 * Lets the first `count` calls of `method` reach the server, then throws
 * UNAVAILABLE as if the response had been lost on the way back.
 */
export function loseResponses(method: string, count: number): Interceptor {
  let left = count;
  return (next) => async (req) => {
    const response = await next(req);
    if (req.method.name === method && left > 0) {
      left -= 1;
      throw new ConnectError("response lost (test fault)", Code.Unavailable);
    }
    return response;
  };
}

/** Polls `check` until it returns true; fails after `timeoutMs` (a bound, not a timing assertion). */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Client options for a server that may be down: no retries (a refused connection fails at once). */
export const FAIL_FAST = { retry: { maxAttempts: 1 } } as const;
