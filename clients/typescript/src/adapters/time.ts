/** Timestamps as the SDKs spell them. */

import { timestampFromMs, timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";

/** Epoch milliseconds of a timestamp; 0 when unset. */
export function toMs(timestamp: Timestamp | undefined): number {
  return timestamp === undefined ? 0 : timestampMs(timestamp);
}

/** ISO 8601 of a timestamp; the epoch when unset. */
export function toIso(timestamp: Timestamp | undefined): string {
  return new Date(toMs(timestamp)).toISOString();
}

/** A timestamp of epoch milliseconds. */
export function fromMs(ms: number): Timestamp {
  return timestampFromMs(ms);
}
