/**
 * The Mnemo TypeScript client for browsers and React Native: gRPC-Web or
 * Connect over fetch, to the server's web port (`--web-listen`). Nothing here
 * imports Node modules, so bundlers (esbuild, Metro) take it as is.
 */
import { clientsOver, type MnemoClient } from "./client.js";
import type { MnemoClientOptions, TransportKind } from "./options.js";
import { createFetchTransport } from "./web-transport.js";

export * from "./common.js";

/** MnemoClientOptions of the browser entry point: no "grpc" (HTTP/2 trailers). */
export type MnemoWebClientOptions = MnemoClientOptions & {
  transport?: Exclude<TransportKind, "grpc">;
};

/** A client of every mnemo.v1 service over gRPC-Web (default) or Connect. */
export function createMnemoClient(options: MnemoWebClientOptions): MnemoClient {
  if ((options.transport as TransportKind | undefined) === "grpc") {
    throw new TypeError('transport "grpc" needs Node (import "@mnemo/client", not ".../web")');
  }
  return clientsOver(createFetchTransport(options.transport ?? "grpc-web", options));
}
