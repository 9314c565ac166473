/**
 * Names and ids shared by every adapter: how an SDK's free-form conversation
 * id becomes a Mnemo resource id, and how request ids and client-chosen ids
 * are made.
 */

import { sha256Hex } from "./sha256.js";

/** Mnemo's id rule for users, conversations and memories (1-128 characters). */
const MNEMO_ID = /^[A-Za-z0-9][A-Za-z0-9._~:-]{0,127}$/;
/** Ids that start with this are always encoded, so encoding is one-to-one. */
const ENCODED_PREFIX = "enc~";
const HASHED_PREFIX = `${ENCODED_PREFIX}sha256~`;
const MAX_ID_LENGTH = 128;

/**
 * The Mnemo conversation id for an SDK conversation id.
 *
 * An id Mnemo accepts as it is stays as it is, so the same conversation is
 * shared by every SDK and client that names it ("work" is "work" from goliath,
 * Anvia and Python alike). Any other string (spaces, slashes, non-ASCII, too
 * long, or one that starts with `enc~`) becomes `enc~` + its base64url UTF-8
 * bytes, or `enc~sha256~` + its digest when that would exceed 128 characters.
 */
export function toMnemoId(sdkId: string): string {
  if (MNEMO_ID.test(sdkId) && !sdkId.startsWith(ENCODED_PREFIX)) return sdkId;
  const encoded = ENCODED_PREFIX + base64Url(new TextEncoder().encode(sdkId));
  if (encoded.length <= MAX_ID_LENGTH) return encoded;
  return HASHED_PREFIX + sha256Hex(sdkId);
}

/** The SDK id `toMnemoId` came from (a hashed id cannot be reversed and is returned as is). */
export function fromMnemoId(mnemoId: string): string {
  if (!mnemoId.startsWith(ENCODED_PREFIX) || mnemoId.startsWith(HASHED_PREFIX)) return mnemoId;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(
      fromBase64Url(mnemoId.slice(ENCODED_PREFIX.length)),
    );
  } catch {
    return mnemoId;
  }
}

/**
 * A request id that is the same for the same logical write, so a retry (by
 * the adapter, or by the SDK calling again after an error) is answered with
 * the first result instead of writing twice. At most 128 characters.
 */
export function deterministicRequestId(kind: string, ...parts: unknown[]): string {
  return `${kind}:${sha256Hex(JSON.stringify(parts))}`;
}

/** A random id usable as a Mnemo id (memory ids chosen by an offline device, request ids). */
export function randomId(): string {
  const webCrypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (webCrypto?.randomUUID) return webCrypto.randomUUID();
  // React Native without a crypto polyfill: not cryptographic, only unique enough.
  const hex = () => Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, "0");
  return `${hex()}-${hex()}-${hex()}-${hex()}`;
}

/** The last segment of a resource name (`users/u/memories/m` -> `m`). */
export function lastSegment(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1);
}

/** The user id of a `users/{user}/...` resource name. */
export function userOf(name: string): string {
  return name.split("/")[1] ?? "";
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function base64Url(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((bytes.length - i) * 8) / 6));
    for (let j = 0; j < chars; j++) out += ALPHABET[(n >> (18 - 6 * j)) & 63];
  }
  return out;
}

function fromBase64Url(text: string): Uint8Array {
  const bytes: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const char of text) {
    const value = ALPHABET.indexOf(char);
    if (value < 0) throw new Error("not base64url");
    buffer = (buffer << 6) | value;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((buffer >> bits) & 0xff);
    }
  }
  return Uint8Array.from(bytes);
}

/** `users/{user}`. */
export function userName(userId: string): string {
  return `users/${userId}`;
}

/** `users/{user}/conversations/{conversation}` for an SDK conversation id. */
export function conversationName(userId: string, sdkConversationId: string): string {
  return `${userName(userId)}/conversations/${toMnemoId(sdkConversationId)}`;
}
