/**
 * Resource names from the ids a caller passes, as the Python client builds
 * them. The server validates ids; these only refuse a "/" inside one, which
 * would silently address another resource (user "u1/conversations/c2").
 */
import { Code } from "@connectrpc/connect";
import { MnemoError } from "./errors.js";

function id(value: string, field: string): string {
  if (value.includes("/")) {
    throw new MnemoError({
      code: Code.InvalidArgument,
      rawMessage: `${field} ${JSON.stringify(value)} must be an id, not a path: it contains '/'`,
      reason: "INVALID_NAME",
      metadata: { field },
      fieldViolations: [{ field, description: "must not contain '/'" }],
    });
  }
  return value;
}

/** `users/{user}`. Throws MnemoError INVALID_NAME for an id containing "/". */
export function userName(user: string): string {
  return `users/${id(user, "user")}`;
}

/** `users/{user}/conversations/{conversation}`. */
export function conversationName(user: string, conversation: string): string {
  return `${userName(user)}/conversations/${id(conversation, "conversation")}`;
}

/** The working memory of `conversation`; undefined or "" is the default conversation. */
export function memoryStateName(user: string, conversation?: string): string {
  return conversation
    ? `${conversationName(user, conversation)}/memoryState`
    : `${userName(user)}/memoryState`;
}

function childName(user: string, collection: string, child: string, field: string): string {
  const parent = `${userName(user)}/${collection}/`;
  return parent + id(child.startsWith(parent) ? child.slice(parent.length) : child, field);
}

/** `users/{user}/memories/{memory}`; `memory` is an id or the entry's name. */
export function memoryName(user: string, memory: string): string {
  return childName(user, "memories", memory, "memory");
}

/** `users/{user}/memoryCandidates/{candidate}`; an id or the candidate's name. */
export function memoryCandidateName(user: string, candidate: string): string {
  return childName(user, "memoryCandidates", candidate, "candidate");
}
