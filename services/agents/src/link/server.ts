import * as grpc from "@grpc/grpc-js";
import { agentLinkGrpcDefinition } from "@orch/contracts";
import type { LinkCall } from "./session.js";
import { linkTlsIssues, loadLinkIdentity, type LinkIdentity } from "./tls.js";

export interface LinkServerOptions {
  host: string;
  port: number;
  /** PEM file paths (certificate or full chain, key): required unless `insecure`. */
  tlsCert: string;
  tlsKey: string;
  /** Optional CA certificate(s) sent after the certificate (agents.tls_ca). */
  tlsCa?: string;
  /** Plaintext on explicit request only (agents.insecure). */
  insecure: boolean;
  keepaliveMs: number;
  keepaliveTimeoutMs: number;
  onStream(call: LinkCall): void;
}

export interface LinkServer {
  /** The bound port (useful when 0 was asked for). */
  port: number;
  tls: boolean;
  /** The served certificate (fingerprints agents pin); undefined on an insecure link. */
  identity: LinkIdentity | undefined;
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
  // Checked again here (config does it first) so no caller can open a plaintext link by omission.
  const settings = { tls_cert: opts.tlsCert, tls_key: opts.tlsKey, tls_ca: opts.tlsCa ?? "", insecure: opts.insecure };
  const issue = linkTlsIssues(settings)[0];
  if (issue) throw new Error(issue.message);
  const identity = opts.insecure ? undefined : loadLinkIdentity(opts.tlsCert, opts.tlsKey, opts.tlsCa);
  const tls = identity !== undefined;
  const creds = identity
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: identity.certChain, private_key: identity.privateKey }])
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(hostPort(opts.host, opts.port), creds, (err, p) => (err ? reject(err) : resolve(p))),
  );
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
    identity,
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
