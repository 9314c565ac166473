/**
 * ChangeFollower: a user's change feed followed forever, resuming by itself
 * (the Python client's `ChangeFollower`, same contract).
 *
 *     const follower = new ChangeFollower(mnemo, "u1", {
 *       afterCursor: savedCursor,
 *       onResync: async (error) => reloadEverything(),   // CURSOR_EXPIRED / CURSOR_AHEAD
 *     });
 *     for await (const event of follower) {
 *       if (event.case === "change") { apply(event.value); savedCursor = follower.cursor; }
 *       // else a heartbeat: caught up; event.value.cursor is the user's latest
 *     }
 *
 * Every watch starts after `follower.cursor` (the last change yielded), so
 * across reconnects no change is missed or yielded twice. A watch is resumed:
 *
 * - at once when it ends cleanly (the server shut down; after a backoff if it
 *   ended before sending anything) or with ABORTED WATCH_LAGGING;
 * - after a backoff (100 ms doubling up to `maxBackoffMs`, jittered; back to
 *   100 ms once a message arrives) on every transient error: UNAVAILABLE (the
 *   server or its database cannot serve now), INTERNAL and UNKNOWN (a proxy's
 *   or a server's fault, or a reset connection), CANCELLED, DEADLINE_EXCEEDED
 *   (each watch lasts at most `watchTimeoutMs`), RESOURCE_EXHAUSTED and
 *   ABORTED CONCURRENT_MODIFICATION.
 *
 * Resync: OUT_OF_RANGE with CURSOR_EXPIRED (the changes after the cursor are
 * no longer retained) or CURSOR_AHEAD (the cursor is beyond the user's latest:
 * it came from another database, e.g. after a restore) means the
 * application's copy is out of step. With `onResync`, the follower reads the
 * user's latest cursor, awaits `onResync(error)` (which reloads everything it
 * keeps, e.g. with the list methods; `error.reason` says why) and goes on
 * after that latest cursor; changes made during the reload come again, so
 * applying a change twice must be harmless. Without it the error is thrown.
 * A transient failure of that read backs off and watches again.
 *
 * `onError` is told of every error the follower recovers from; any other
 * error (INVALID_ARGUMENT, UNAUTHENTICATED, ...) is thrown from the
 * iteration. The iteration ends when the loop breaks or `signal` aborts.
 */
import { Code } from "@connectrpc/connect";
import type { MnemoClient } from "./client.js";
import { MnemoError, toMnemoError } from "./errors.js";
import type { Change, Heartbeat } from "./gen/mnemo/v1/sync_pb.js";
import { sleep } from "./interceptors.js";
import { userName } from "./names.js";

/** What a follower yields: a change, or a heartbeat while caught up. */
export type FollowEvent = { case: "change"; value: Change } | { case: "heartbeat"; value: Heartbeat };

/** What a follower does after an error ended a watch. */
export type FollowStep = "resume" | "backoff" | "resync";

/** The OUT_OF_RANGE reasons after which a follower resyncs. */
export const RESYNC_REASONS: readonly string[] = Object.freeze(["CURSOR_EXPIRED", "CURSOR_AHEAD"]);

const FIRST_BACKOFF_MS = 100;

export interface ChangeFollowerOptions {
  /** Follow the changes after this cursor (default 0: from the oldest retained). */
  afterCursor?: bigint;
  /** Rebuild the application's copy (see the module comment); without it a resync error is thrown. */
  onResync?: (error: MnemoError) => void | Promise<void>;
  /** Told of every error the follower recovers from (for logging). */
  onError?: (error: MnemoError) => void;
  /** Bound of one watch, in ms; the follower then watches again. Default 300 000. */
  watchTimeoutMs?: number;
  /** The largest backoff, in ms. Default 5 000. */
  maxBackoffMs?: number;
  /** Ends the iteration (also during a backoff). */
  signal?: AbortSignal;
}

/** What a follower does after `error`; throws it if it is fatal. */
export function nextStep(error: MnemoError): FollowStep {
  switch (error.code) {
    case Code.Aborted:
      if (error.reason === "WATCH_LAGGING") return "resume";
      if (error.reason === "CONCURRENT_MODIFICATION") return "backoff";
      break;
    case Code.Unavailable:
    case Code.Internal:
    case Code.Unknown:
    case Code.Canceled:
    case Code.DeadlineExceeded:
    case Code.ResourceExhausted:
      return "backoff";
    case Code.OutOfRange:
      if (RESYNC_REASONS.includes(error.reason)) return "resync";
      break;
    default:
      break;
  }
  throw error;
}

/** Milliseconds to wait after `failures` transient failures in a row (jittered). */
export function followBackoffMs(failures: number, maxBackoffMs: number): number {
  const ceiling = Math.min(maxBackoffMs, FIRST_BACKOFF_MS * 2 ** Math.max(failures - 1, 0));
  return ceiling * (0.5 + Math.random() / 2);
}

/** Follows one user's change feed; see the module comment. */
export class ChangeFollower implements AsyncIterable<FollowEvent> {
  /** The cursor of the last change yielded (where the next watch starts). */
  cursor: bigint;
  private failures = 0;
  private readonly parent: string;
  private readonly signal: AbortSignal;

  constructor(
    private readonly client: MnemoClient,
    readonly user: string,
    private readonly options: ChangeFollowerOptions = {},
  ) {
    this.cursor = options.afterCursor ?? 0n;
    this.parent = userName(user);
    this.signal = options.signal ?? new AbortController().signal;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<FollowEvent, void, undefined> {
    while (!this.signal.aborted) {
      let step: FollowStep;
      try {
        let received = false;
        const stream = this.client.sync.watchChanges(
          { parent: this.parent, afterCursor: this.cursor },
          { signal: this.signal, timeoutMs: this.options.watchTimeoutMs ?? 300_000 },
        );
        for await (const response of stream) {
          received = true;
          this.failures = 0;
          const event = response.event;
          if (event.case === "change") {
            this.cursor = event.value.cursor;
            yield { case: "change", value: event.value };
          } else if (event.case === "heartbeat") {
            yield { case: "heartbeat", value: event.value };
          }
        }
        step = received ? "resume" : "backoff"; // a clean end: the server shut down
      } catch (thrown) {
        if (this.signal.aborted) return;
        const error = toMnemoError(thrown);
        step = this.after(error);
        if (step === "resync") step = await this.resync(error);
      }
      if (step === "backoff") {
        this.failures += 1;
        await sleep(followBackoffMs(this.failures, this.options.maxBackoffMs ?? 5_000), this.signal);
      }
    }
  }

  private after(error: MnemoError): FollowStep {
    const step = nextStep(error);
    if (step === "resync" && this.options.onResync === undefined) throw error;
    this.options.onError?.(error);
    return step;
  }

  private async resync(error: MnemoError): Promise<FollowStep> {
    let latest: bigint;
    try {
      const page = await this.client.sync.listChanges({ parent: this.parent, pageSize: 1 });
      latest = page.latestCursor;
    } catch (thrown) {
      const failed = toMnemoError(thrown);
      if (nextStep(failed) !== "backoff") throw failed;
      this.options.onError?.(failed);
      return "backoff";
    }
    await this.options.onResync?.(error);
    this.cursor = latest;
    return "resume";
  }
}
