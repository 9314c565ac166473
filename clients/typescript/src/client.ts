/**
 * The transport-independent part of the facade: typed clients of the five
 * mnemo.v1 services over a Connect transport built with `facadeInterceptors`.
 */
import {
  createClient,
  type CallOptions,
  type Client,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { CallScope, endedStream, linkedAbort } from "./call-scope.js";
import { toMnemoError } from "./errors.js";
import { ConversationService } from "./gen/mnemo/v1/conversations_pb.js";
import { GovernanceService } from "./gen/mnemo/v1/governance_pb.js";
import { MemoryService } from "./gen/mnemo/v1/memories_pb.js";
import { SyncService } from "./gen/mnemo/v1/sync_pb.js";
import { WorkingMemoryService } from "./gen/mnemo/v1/working_memory_pb.js";
import { DEFAULT_RETRY_POLICY, facadeInterceptors } from "./interceptors.js";
import type { MnemoClientOptions } from "./options.js";

/**
 * Typed clients of every mnemo.v1 service. Each method takes the request
 * fields (`{ name: "users/u1/memoryState" }`) and optional call options
 * (`{ timeoutMs, signal, headers }`), and rejects with a MnemoError.
 */
export interface MnemoClient {
  readonly workingMemory: Client<typeof WorkingMemoryService>;
  readonly conversations: Client<typeof ConversationService>;
  /**
   * Long-term memory. `recallMemories` streams only the entries relevant to
   * its query (a hit's `score` is its relevance, 0 to 1) and `buildContext`
   * injects only those, so either may answer nothing (then `systemMessage` is
   * "": send the prompt without a memory message). `minScore` sets the
   * minimum relevance of one request (unset: the server's, 0.5 with its
   * default embedder, none when it recalls by words only; 0: every match).
   */
  readonly memories: Client<typeof MemoryService>;
  readonly governance: Client<typeof GovernanceService>;
  readonly sync: Client<typeof SyncService>;
  /** The transport under the clients, e.g. for another generated service. */
  readonly transport: Transport;
  /**
   * End every call in flight (they fail with CANCELLED), with their deadline
   * timers, retry backoffs and streams, and close the connections (gRPC
   * transport), so that nothing of the client keeps Node running; later
   * calls start afresh (and reconnect). Idempotent.
   */
  close(): void;
}

/** The interceptors `createMnemoClient` gives its transport, from its options. */
export function interceptorsFor(options: MnemoClientOptions): Interceptor[] {
  return facadeInterceptors({
    token: options.token,
    headers: options.headers,
    retry: { ...DEFAULT_RETRY_POLICY, ...options.retry },
    autoRequestIds: options.autoRequestIds ?? true,
    extra: options.interceptors ?? [],
  });
}

/** The service clients over `transport` (which must carry `interceptorsFor(options)`). */
export function clientsOver(transport: Transport, close: () => void = () => {}): MnemoClient {
  const scope = new CallScope();
  return {
    workingMemory: mnemoClient(WorkingMemoryService, transport, scope),
    conversations: mnemoClient(ConversationService, transport, scope),
    memories: mnemoClient(MemoryService, transport, scope),
    governance: mnemoClient(GovernanceService, transport, scope),
    sync: mnemoClient(SyncService, transport, scope),
    transport,
    close: () => {
      scope.close();
      close();
    },
  };
}

type Call = (input: unknown, options?: CallOptions) => unknown;

/**
 * Connect's client of `service` whose methods reject with MnemoError: the
 * promise of a unary or client-streaming call, and the iteration of a server
 * stream. (Done here rather than in an interceptor because Connect converts
 * an error raised inside a response stream back into a ConnectError.) Every
 * call runs under `scope` (call-scope.ts): `scope.close()` ends it, and a
 * server stream left before its end is ended at once, its deadline timer
 * cleared; such a stream starts when it is first read.
 */
export function mnemoClient<S extends DescService>(
  service: S,
  transport: Transport,
  scope: CallScope = new CallScope(),
): Client<S> {
  const client = createClient(service, transport) as Record<string, Call>;
  const wrapped: Record<string, unknown> = {};
  for (const method of service.methods) {
    const call = client[method.localName];
    if (call === undefined) continue;
    wrapped[method.localName] =
      method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming"
        ? (input: unknown, options?: CallOptions) =>
            endedStream(
              (signal) => call(input, { ...options, signal }) as AsyncIterable<unknown>,
              () => [scope.signal, options?.signal],
              toMnemoError,
            )
        : async (input: unknown, options?: CallOptions) => {
            const link = linkedAbort(scope.signal, options?.signal);
            try {
              return await call(input, { ...options, signal: link.controller.signal });
            } catch (error) {
              throw toMnemoError(error);
            } finally {
              link.unlink();
            }
          };
  }
  return wrapped as Client<S>;
}
