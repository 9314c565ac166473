/** Anvia messages to and from Mnemo's HistoryMessage (the message JSON is stored verbatim). */

import type { HistoryMessage } from "../../gen/mnemo/v1/conversations_pb.js";
import type { JsonObject, Message } from "./types.js";

/** The Mnemo input for each message: only `messageJson` is read by the server. */
export function toHistoryInputs(messages: readonly Message[]): { messageJson: string }[] {
  return messages.map((message) => ({ messageJson: JSON.stringify(message) }));
}

/** The Anvia message a HistoryMessage holds, byte for byte as it was appended. */
export function fromHistoryMessage(message: HistoryMessage): Message {
  return JSON.parse(message.messageJson) as Message;
}

/** The fields of a RunError for whatever an Anvia run failed with. */
export function toRunError(error: unknown): { message: string; code: string; detailsJson: string } {
  const record = typeof error === "object" && error !== null ? (error as Record<string, unknown>) : {};
  const message =
    error instanceof Error
      ? error.message || error.name
      : typeof error === "string"
        ? error
        : safeJson(error);
  const code = typeof record["code"] === "string" ? record["code"] : "";
  const details: JsonObject = {};
  if (error instanceof Error) {
    details["name"] = error.name;
    if (error.cause !== undefined) details["cause"] = String(error.cause);
  }
  return {
    message: message || "unknown error",
    code,
    detailsJson: Object.keys(details).length > 0 ? JSON.stringify(details) : "",
  };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
