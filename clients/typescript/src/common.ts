/** What both entry points (Node: index.ts, browsers: web.ts) export. */
export { Code, ConnectError, type CallOptions, type Interceptor, type Transport } from "@connectrpc/connect";
export { create, toJson, fromJson, type MessageInitShape } from "@bufbuild/protobuf";
export { timestampDate, timestampFromDate, timestampNow } from "@bufbuild/protobuf/wkt";
export { clientsOver, interceptorsFor, type MnemoClient } from "./client.js";
export {
  ChangeFollower,
  RESYNC_REASONS,
  followBackoffMs,
  nextStep,
  type ChangeFollowerOptions,
  type FollowEvent,
  type FollowStep,
} from "./follow.js";
export {
  ERROR_DOMAIN,
  MnemoError,
  codeName,
  toMnemoError,
  type FieldViolation,
  type MnemoErrorInit,
} from "./errors.js";
export {
  DEFAULT_RETRY_POLICY,
  facadeInterceptors,
  newRequestId,
  type RetryPolicy,
  type TokenSource,
} from "./interceptors.js";
export {
  conversationName,
  memoryCandidateName,
  memoryName,
  memoryStateName,
  userName,
} from "./names.js";
export { DEFAULT_TIMEOUT_MS, type MnemoClientOptions, type TransportKind } from "./options.js";
export { createFetchTransport } from "./web-transport.js";
export * from "./gen/mnemo/v1/conversations_pb.js";
export * from "./gen/mnemo/v1/error_reason_pb.js";
export * from "./gen/mnemo/v1/governance_pb.js";
export * from "./gen/mnemo/v1/memories_pb.js";
export * from "./gen/mnemo/v1/sync_pb.js";
export * from "./gen/mnemo/v1/working_memory_pb.js";
// Drop-in adapters for the goliath, Anvia and gecx-chat SDKs (see docs/clients/typescript.md).
export * from "./adapters/index.js";
