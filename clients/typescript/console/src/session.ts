/**
 * Signing in: a token (a JWT under `--auth jwt`) and/or a user id (`--auth
 * none`), and the clients that carry it to the web port this page came from.
 *
 * The token is kept in memory only (a reload signs out). Its claims are read
 * here without checking the signature, only to know whose memory to show: the
 * server checks the token on every call.
 */
import { createMnemoClient, type MnemoClient } from "../../src/web.js";

export interface Session {
  readonly user: string;
  /** The token's tenant claim ("" when absent). */
  readonly tenant: string;
  /** The token holds the default admin role (`mnemo:admin`). */
  readonly admin: boolean;
  readonly signedInWithToken: boolean;
  /** Calls with the default deadline. */
  readonly client: MnemoClient;
  /** Calls without a deadline (the change feed). */
  readonly watcher: MnemoClient;
  /** The user's latest change cursor at sign-in: the live feed starts after it. */
  readonly startCursor: bigint;
}

export interface TokenClaims {
  sub?: string;
  tenant?: string;
  roles?: string[];
  scope?: string;
}

const ADMIN_ROLE = "mnemo:admin";

/** The claims of a JWT's payload, or undefined when `token` is not a JWT. */
export function claimsOf(token: string): TokenClaims | undefined {
  const payload = token.split(".")[1];
  if (payload === undefined) return undefined;
  try {
    const base64 = payload.replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const claims: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof claims === "object" && claims !== null ? (claims as TokenClaims) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A session for `token` and/or `user`; the user defaults to the token's
 * `sub`. Rejects with an Error when neither names a user, and with the
 * server's MnemoError when it refuses the token or the user (UNAUTHENTICATED,
 * NOT_FOUND for another user's name).
 */
export async function signIn(token: string, user: string, baseUrl: string): Promise<Session> {
  const claims = token === "" ? undefined : claimsOf(token);
  const who = user.trim() || claims?.sub || "";
  if (who === "") throw new Error("Give a token (its sub is the user) or a user id.");
  const roles = [...(claims?.roles ?? []), ...(claims?.scope ?? "").split(" ")];
  const options = { baseUrl, transport: "grpc-web" as const, ...(token ? { token } : {}) };
  const client = createMnemoClient(options);
  // The first call checks the token (and that the user is the caller's to see).
  const changes = await client.sync.listChanges({ parent: `users/${who}`, pageSize: 1 });
  return {
    user: who,
    tenant: typeof claims?.tenant === "string" ? claims.tenant : "",
    admin: roles.includes(ADMIN_ROLE),
    signedInWithToken: token !== "",
    client,
    watcher: createMnemoClient({ ...options, timeoutMs: null }),
    startCursor: changes.latestCursor,
  };
}

export const userParent = (session: Session): string => `users/${session.user}`;
