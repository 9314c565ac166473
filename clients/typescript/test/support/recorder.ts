/** An innermost interceptor recording what each attempt sent, for the facade tests. */
import type { Interceptor } from "@connectrpc/connect";

export interface Attempt {
  method: string;
  requestId: string | undefined;
  authorization: string | null;
}

/** `interceptor` appends one Attempt per attempt that reaches the transport. */
export function attemptRecorder(): { attempts: Attempt[]; interceptor: Interceptor } {
  const attempts: Attempt[] = [];
  const interceptor: Interceptor = (next) => async (req) => {
    const message = req.stream ? undefined : (req.message as unknown as Record<string, unknown>);
    const requestId = message?.["requestId"];
    attempts.push({
      method: req.method.name,
      requestId: typeof requestId === "string" ? requestId : undefined,
      authorization: req.header.get("authorization"),
    });
    return next(req);
  };
  return { attempts, interceptor };
}
