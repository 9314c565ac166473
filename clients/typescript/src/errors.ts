/**
 * MnemoError: what a failed Mnemo call throws, whatever the transport.
 *
 * Every facade call rejects with a MnemoError (never a bare ConnectError). It
 * carries what the server put in the `google.rpc.Status` details of the
 * `grpc-status-details-bin` trailer (or the Connect error body):
 *
 * - `code`: the status code (Connect's `Code`, numerically the gRPC code);
 *   `codeName` spells it like gRPC, e.g. "NOT_FOUND";
 * - `reason`: the `ErrorInfo` reason, e.g. "ETAG_MISMATCH" ("" when the status
 *   has none, e.g. a deadline that expired on the client);
 * - `domain` and `metadata`: the `ErrorInfo` domain ("mnemo.v1") and metadata;
 * - `fieldViolations`: `{ field, description }` pairs from `BadRequest`;
 * - `retryAfterMs`: the `RetryInfo` delay in milliseconds, if any;
 * - `rawMessage`: the status message as the server sent it.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
} from "./gen/google/rpc/error_details_pb.js";

/** The `ErrorInfo` domain of every Mnemo error. */
export const ERROR_DOMAIN = "mnemo.v1";

/** One offending request field, from `google.rpc.BadRequest`. */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/** The gRPC spelling of a status code: `Code.NotFound` -> "NOT_FOUND". */
export function codeName(code: Code): string {
  const name = Code[code] as string | undefined;
  if (name === undefined) return `CODE_${code}`;
  return name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

export interface MnemoErrorInit {
  code: Code;
  rawMessage: string;
  reason?: string;
  domain?: string;
  metadata?: Readonly<Record<string, string>>;
  fieldViolations?: readonly FieldViolation[];
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/** A Mnemo call failed; see the module comment for what it carries. */
export class MnemoError extends Error {
  override readonly name = "MnemoError";
  readonly code: Code;
  readonly rawMessage: string;
  readonly reason: string;
  readonly domain: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly fieldViolations: readonly FieldViolation[];
  readonly retryAfterMs: number | undefined;

  constructor(init: MnemoErrorInit) {
    super(describe(init), { cause: init.cause });
    this.code = init.code;
    this.rawMessage = init.rawMessage;
    this.reason = init.reason ?? "";
    this.domain = init.domain ?? "";
    this.metadata = { ...(init.metadata ?? {}) };
    this.fieldViolations = [...(init.fieldViolations ?? [])];
    this.retryAfterMs = init.retryAfterMs;
  }

  /** The gRPC spelling of `code`, e.g. "INVALID_ARGUMENT". */
  get codeName(): string {
    return codeName(this.code);
  }

  /** Whether this error has the given reason (and, if given, code). */
  is(reason: string, code?: Code): boolean {
    return this.reason === reason && (code === undefined || this.code === code);
  }
}

function describe(init: MnemoErrorInit): string {
  const reason = init.reason ? ` [${init.reason}]` : "";
  const violations = (init.fieldViolations ?? [])
    .map((v) => `\n  ${v.field}: ${v.description}`)
    .join("");
  return `${codeName(init.code)}${reason}: ${init.rawMessage}${violations}`;
}

/**
 * The MnemoError for anything a call threw: a MnemoError as is, a ConnectError
 * with its decoded details, anything else as UNKNOWN (or CANCELLED for an
 * AbortError, as Connect does).
 */
export function toMnemoError(error: unknown): MnemoError {
  if (error instanceof MnemoError) return error;
  const connectError = ConnectError.from(error);
  const [info] = connectError.findDetails(ErrorInfoSchema);
  const violations = connectError
    .findDetails(BadRequestSchema)
    .flatMap((badRequest) => badRequest.fieldViolations)
    .map((v) => ({ field: v.field, description: v.description }));
  const [retryInfo] = connectError.findDetails(RetryInfoSchema);
  const delay = retryInfo?.retryDelay;
  return new MnemoError({
    code: connectError.code,
    rawMessage: connectError.rawMessage,
    reason: info?.reason ?? "",
    domain: info?.domain ?? "",
    metadata: info?.metadata ?? {},
    fieldViolations: violations,
    retryAfterMs:
      delay === undefined ? undefined : Number(delay.seconds) * 1000 + delay.nanos / 1e6,
    cause: connectError,
  });
}
