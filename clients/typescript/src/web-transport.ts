/** The fetch transports (gRPC-Web, Connect) for browsers, React Native and Node. */
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { interceptorsFor } from "./client.js";
import { baseUrlOf, defaultTimeoutMs, type MnemoClientOptions } from "./options.js";

/** A gRPC-Web or Connect transport (binary protobuf) with the facade's interceptors. */
export function createFetchTransport(
  kind: "grpc-web" | "connect",
  options: MnemoClientOptions,
): Transport {
  const common = {
    baseUrl: baseUrlOf(options),
    useBinaryFormat: true,
    interceptors: interceptorsFor(options),
    defaultTimeoutMs: defaultTimeoutMs(options),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  };
  return kind === "grpc-web" ? createGrpcWebTransport(common) : createConnectTransport(common);
}
