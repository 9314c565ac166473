/**
 * What a client's `close()` ends: every call it started that is still in
 * flight, with the deadline timer, the retry backoff and the HTTP/2 stream of
 * each.
 *
 * Connect starts a deadline timer per call (the client's `timeoutMs`, 10 s by
 * default) and clears it only when the call ends: a unary call that settles,
 * a stream read to its end or failing. A stream left early (`break` out of
 * `for await`, as the README tour does with `watchChanges`) was never ended:
 * its timer kept Node alive for up to `timeoutMs` after the program's last
 * line, and its stream stayed open on the server. So every call runs under
 * an AbortSignal of its own, linked to the caller's `signal` and to the
 * scope's; a stream left early aborts it and reads once more, which lets
 * Connect clear its timer and reset the stream; `close()` aborts the scope,
 * which ends every call in flight with CANCELLED.
 */
import { Code, ConnectError } from "@connectrpc/connect";

/** One generation of calls; `close()` ends it and starts the next. */
export class CallScope {
  private controller = new AbortController();

  /** Aborts when `close()` is called (each call links to it when it starts). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** End every call started so far (CANCELLED); later calls run in a new generation. */
  close(): void {
    const ended = this.controller;
    this.controller = new AbortController();
    ended.abort(new ConnectError("the client was closed", Code.Canceled));
  }
}

/** An AbortController that also aborts when any of `signals` does; `unlink` stops listening. */
export interface LinkedAbort {
  readonly controller: AbortController;
  unlink(): void;
}

export function linkedAbort(...signals: (AbortSignal | undefined)[]): LinkedAbort {
  const controller = new AbortController();
  const linked = signals.filter((s): s is AbortSignal => s !== undefined);
  const onAbort = (event: Event) => {
    controller.abort((event.target as AbortSignal).reason);
  };
  const unlink = () => {
    for (const signal of linked) signal.removeEventListener("abort", onAbort);
  };
  for (const signal of linked) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener("abort", onAbort, { once: true });
  }
  return { controller, unlink };
}

const ignore = () => undefined;

/**
 * Iterate over the stream `start(signal)` returns, which starts on the first
 * read, under a signal linked to `signals()` (read then). The stream is
 * ended (aborted, then read once more, which Connect answers by clearing its
 * deadline timer and resetting the HTTP/2 stream) when the consumer leaves
 * before its end, or when a linked signal aborts while the consumer is not
 * reading (a later read then fails with that reason). `wrapError` maps the
 * errors the iteration raises.
 */
export async function* endedStream<T>(
  start: (signal: AbortSignal) => AsyncIterable<T>,
  signals: () => (AbortSignal | undefined)[],
  wrapError: (error: unknown) => unknown,
): AsyncGenerator<T, void, undefined> {
  const link = linkedAbort(...signals());
  const { signal } = link.controller;
  const iterator = start(signal)[Symbol.asyncIterator]();
  let reading = false;
  let ended = false;
  let drained = false;
  const drain = () => {
    if (ended || reading || drained) return;
    drained = true;
    void iterator.next().then(ignore, ignore);
  };
  signal.addEventListener("abort", drain, { once: true });
  try {
    for (;;) {
      if (drained) {
        ended = true;
        throw wrapError(signal.reason);
      }
      let next: IteratorResult<T>;
      reading = true;
      try {
        next = await iterator.next();
      } catch (error) {
        ended = true;
        throw wrapError(error);
      } finally {
        reading = false;
      }
      if (next.done === true) {
        ended = true;
        return;
      }
      yield next.value;
    }
  } finally {
    link.unlink();
    signal.removeEventListener("abort", drain);
    if (!ended) {
      link.controller.abort(new ConnectError("the stream was left before its end", Code.Canceled));
      if (!drained) await iterator.next().then(ignore, ignore);
    }
  }
}
