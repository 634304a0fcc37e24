import { createSocket, type RemoteInfo, type Socket } from "node:dgram";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentLogger } from "./runtime.js";
import { HOST_PORT_RE, validHostPort } from "./host-port.js";

export const SERVER_FILE = "server";

/**
 * Reads a discovery datagram (`{"type":"orch.discover","link":"host:port"}`); undefined when it is
 * not one. An unspecified host (0.0.0.0, ::) means "the address this datagram came from".
 */
export function parseDiscovery(data: Buffer, from: RemoteInfo): string | undefined {
  if (data.length > 1024) return undefined;
  let msg: unknown;
  try {
    msg = JSON.parse(data.toString("utf8"));
  } catch {
    return undefined;
  }
  if (!msg || typeof msg !== "object") return undefined;
  const { type, link } = msg as { type?: unknown; link?: unknown };
  if (type !== "orch.discover" || typeof link !== "string" || !validHostPort(link)) return undefined;
  const m = HOST_PORT_RE.exec(link)!;
  const host = m[1]!;
  if (host === "0.0.0.0" || host === "[::]" || host === "::") {
    return from.family === "IPv6" ? `[${from.address}]:${m[2]}` : `${from.address}:${m[2]}`;
  }
  return link;
}

/** The link address learned by discovery, kept in the data dir so a restart reconnects. */
export function readSavedServer(dataDir: string): string | undefined {
  const p = join(dataDir, SERVER_FILE);
  if (!existsSync(p)) return undefined;
  const s = readFileSync(p, "utf8").trim();
  return validHostPort(s) ? s : undefined;
}

export function saveServer(dataDir: string, server: string): void {
  const p = join(dataDir, SERVER_FILE);
  writeFileSync(`${p}.tmp`, `${server}\n`, { mode: 0o600 });
  renameSync(`${p}.tmp`, p);
}

/**
 * Listens on UDP for discovery datagrams until one names a link address. Only an agent without a
 * server listens at all: once it has one, a stray or hostile datagram cannot move it elsewhere.
 */
export function listenForDiscovery(opts: {
  port: number;
  log: AgentLogger;
  onServer(server: string): void;
}): Promise<{ close(): void }> {
  const sock: Socket = createSocket({ type: "udp4", reuseAddr: true });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    sock.close();
  };
  sock.on("message", (data, rinfo) => {
    const server = parseDiscovery(data, rinfo);
    if (!server) {
      opts.log.debug({ from: rinfo.address }, "ignored a datagram that is not a discovery announcement");
      return;
    }
    opts.log.info({ server, from: rinfo.address }, "discovered the agents service");
    close();
    opts.onServer(server);
  });
  return new Promise((resolve, reject) => {
    sock.once("error", reject);
    sock.bind(opts.port, "0.0.0.0", () => {
      sock.off("error", reject);
      sock.on("error", (err) => opts.log.warn({ err: err.message }, "discovery socket error"));
      opts.log.info({ port: opts.port }, "waiting for a discovery datagram");
      resolve({ close });
    });
  });
}
