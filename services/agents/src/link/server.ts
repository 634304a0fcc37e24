import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { agentLinkGrpcDefinition } from "@orch/contracts";
import type { LinkCall } from "./session.js";

export interface LinkServerOptions {
  host: string;
  port: number;
  /** PEM file paths; TLS when both are set. */
  tlsCert: string;
  tlsKey: string;
  keepaliveMs: number;
  keepaliveTimeoutMs: number;
  onStream(call: LinkCall): void;
}

export interface LinkServer {
  /** The bound port (useful when 0 was asked for). */
  port: number;
  tls: boolean;
  /** Stops accepting new connections; existing links stay up. */
  stopAccepting(): void;
  /** Closes whatever is left. */
  shutdown(): Promise<void>;
}

const hostPort = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`;

/**
 * The gRPC agent link. Server keepalive pings every link, so a machine that vanished without
 * closing its TCP connection is dropped after keepalive + timeout, not after the kernel's hours.
 */
export async function startLinkServer(opts: LinkServerOptions): Promise<LinkServer> {
  const server = new grpc.Server({
    "grpc.keepalive_time_ms": opts.keepaliveMs,
    "grpc.keepalive_timeout_ms": opts.keepaliveTimeoutMs,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
  });
  server.addService(agentLinkGrpcDefinition as unknown as grpc.ServiceDefinition, {
    connect: (call: LinkCall) => opts.onStream(call),
  });
  const tls = Boolean(opts.tlsCert && opts.tlsKey);
  if ((opts.tlsCert || opts.tlsKey) && !tls) throw new Error("agents.tls_cert and agents.tls_key must be set together");
  const creds = tls
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: readFileSync(opts.tlsCert), private_key: readFileSync(opts.tlsKey) }], false)
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => server.bindAsync(hostPort(opts.host, opts.port), creds, (err, p) => (err ? reject(err) : resolve(p))));
  const bound = hostPort(opts.host, port);
  let accepting = true;
  const stopAccepting = () => {
    if (!accepting) return;
    accepting = false;
    server.unbind(bound);
  };
  return {
    port,
    tls,
    stopAccepting,
    async shutdown() {
      stopAccepting();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        force.unref();
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
    },
  };
}
