import { isIP } from "node:net";
import type { Violation } from "./violation.js";

export const DISCOVERY_TARGET_RULE = "must be host:port (hostname, IPv4 or [IPv6] address, port 1-65535)";

const HOSTNAME_RE = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A unicast discovery target: a hostname, IPv4 address or [IPv6] address, and a port 1..65535. */
export function parseDiscoveryTarget(t: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(t);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  if (m[1] !== undefined) return isIP(m[1]) === 6 ? { host: m[1], port } : undefined;
  const host = m[2]!;
  // All digits and dots is meant as an IPv4 address, never as a name.
  if (/^[\d.]+$/.test(host)) return isIP(host) === 4 ? { host, port } : undefined;
  return host.length <= 253 && HOSTNAME_RE.test(host) ? { host, port } : undefined;
}

export function checkDiscoveryTarget(t: string): Violation | null {
  return parseDiscoveryTarget(t) ? null : { reason: "invalid_target", message: DISCOVERY_TARGET_RULE };
}
