/**
 * The Mnemo TypeScript client for Node: gRPC over HTTP/2, or gRPC-Web/Connect
 * over fetch. Browsers and React Native import "@mnemo/client/web" instead
 * (same API without the Node-only gRPC transport).
 *
 *     const mnemo = createMnemoClient({ baseUrl: "http://127.0.0.1:50051" });
 *     const { memoryState } = await mnemo.workingMemory.getMemoryState({
 *       name: memoryStateName("u1"),
 *     });
 *     mnemo.close();
 */
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";
import { clientsOver, interceptorsFor, type MnemoClient } from "./client.js";
import { baseUrlOf, defaultTimeoutMs, type MnemoClientOptions } from "./options.js";
import { createFetchTransport } from "./web-transport.js";

export * from "./common.js";

/**
 * A client of every mnemo.v1 service over `options.transport` (default "grpc").
 * Nothing is sent until the first call; `close()` ends the HTTP/2 connection.
 */
export function createMnemoClient(options: MnemoClientOptions): MnemoClient {
  const kind = options.transport ?? "grpc";
  if (kind !== "grpc") return clientsOver(createFetchTransport(kind, options));
  const baseUrl = baseUrlOf(options);
  const sessionManager = new Http2SessionManager(baseUrl);
  const transport = createGrpcTransport({
    baseUrl,
    sessionManager,
    interceptors: interceptorsFor(options),
    defaultTimeoutMs: defaultTimeoutMs(options),
  });
  return clientsOver(transport, () => sessionManager.abort());
}
