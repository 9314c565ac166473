/**
 * Live updates: the user's change feed (SyncService.WatchChanges through the
 * client's ChangeFollower), turned into one revision number per area. A view
 * reloads when its area's revision moves, so a change made by another client
 * (another device, an agent) shows without a reload of the page.
 */
import { useEffect, useState } from "preact/hooks";
import { ChangeFollower, type Change } from "../../src/web.js";
import type { Session } from "./session.js";

export type Area = "memories" | "candidates" | "conversations" | "governance";

export interface Live {
  /** "connecting", "live" (caught up) or "reconnecting". */
  status: string;
  /** The cursor of the last change seen. */
  cursor: bigint;
  revisions: Readonly<Record<Area, number>>;
}

const NONE: Record<Area, number> = { memories: 0, candidates: 0, conversations: 0, governance: 0 };

/** The areas a change touches. */
export function areasOf(change: Change): Area[] {
  switch (change.state.case) {
    case "memory":
    case "tombstone":
      return ["memories"];
    case "candidate":
      return ["candidates", "memories"];
    case "conversation":
    case "message":
    case "memoryState":
    case "failedRun":
      return ["conversations"];
    case "consent":
    case "memorySettings":
      return ["governance", "memories", "candidates"];
    default:
      // An erasure (no state) or another kind: everything may have changed.
      return change.state.case === undefined ? ["memories", "candidates", "conversations", "governance"] : [];
  }
}

/** Follows `session`'s change feed while mounted. */
export function useLive(session: Session): Live {
  const [live, setLive] = useState<Live>({
    status: "connecting",
    cursor: session.startCursor,
    revisions: NONE,
  });
  useEffect(() => {
    const stop = new AbortController();
    const follower = new ChangeFollower(session.watcher, session.user, {
      afterCursor: session.startCursor,
      signal: stop.signal,
      onError: () => setLive((now) => ({ ...now, status: "reconnecting" })),
      onResync: () => setLive((now) => ({ ...now, revisions: bumped(now.revisions, Object.keys(NONE) as Area[]) })),
    });
    (async () => {
      for await (const event of follower) {
        if (event.case === "heartbeat") {
          setLive((now) => ({ ...now, status: "live" }));
        } else {
          const areas = areasOf(event.value);
          const cursor = event.value.cursor;
          setLive((now) => ({ status: now.status, cursor, revisions: bumped(now.revisions, areas) }));
        }
      }
    })().catch(() => {
      if (!stop.signal.aborted) setLive((now) => ({ ...now, status: "stopped" }));
    });
    return () => stop.abort();
  }, [session]);
  return live;
}

function bumped(revisions: Readonly<Record<Area, number>>, areas: readonly Area[]): Record<Area, number> {
  const next = { ...revisions };
  for (const area of areas) next[area] += 1;
  return next;
}
