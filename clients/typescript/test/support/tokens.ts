/**
 * HS256 JWTs for tests, made with node:crypto (as tests/support/tokens.py
 * makes them for Python): a fresh secret per server, written to a file the
 * server verifies with `--auth jwt --jwt-hs256-secret-file F --jwt-audience A`.
 */
import { createHmac, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export const AUDIENCE = "mnemo-test";
export const ADMIN_ROLE = "mnemo:admin";

export interface ClaimsOptions {
  tenant?: string;
  admin?: boolean;
  audience?: string;
  /** Seconds from now; negative for an expired token. Default 300. */
  expiresIn?: number;
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString("base64url");
}

export class Hs256Keys {
  readonly secret: Buffer = Buffer.from(randomBytes(48).toString("base64url"));

  /** The `serve` flags of a server verifying these keys' tokens; writes the secret into `dir`. */
  serverArgs(dir: string): string[] {
    const file = join(dir, "jwt.secret");
    writeFileSync(file, this.secret, { mode: 0o600 });
    return ["--auth", "jwt", "--jwt-hs256-secret-file", file, "--jwt-audience", AUDIENCE];
  }

  /** Sign any payload (HS256). */
  sign(payload: Record<string, unknown>): string {
    const header = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
    const body = b64url(JSON.stringify(payload));
    const signature = createHmac("sha256", this.secret).update(`${header}.${body}`).digest();
    return `${header}.${body}.${b64url(signature)}`;
  }

  /** A valid token for `sub`. */
  token(sub: string, options: ClaimsOptions = {}): string {
    const now = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = {
      sub,
      aud: options.audience ?? AUDIENCE,
      iat: now,
      exp: now + (options.expiresIn ?? 300),
    };
    if (options.tenant !== undefined) payload["tenant"] = options.tenant;
    if (options.admin) payload["roles"] = [ADMIN_ROLE];
    return this.sign(payload);
  }
}
