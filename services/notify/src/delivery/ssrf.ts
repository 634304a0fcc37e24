import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Outgoing-address policy. Channel URLs are chosen by admins, but a compromised or careless admin
 * must not turn the notify service into a probe of the cluster network or the cloud metadata
 * endpoint, so these ranges are refused unless `notify.allow_private_targets` is set.
 */
const BLOCKED: Array<[string, number, "ipv4" | "ipv6", string]> = [
  ["0.0.0.0", 8, "ipv4", "unspecified"],
  ["10.0.0.0", 8, "ipv4", "private"],
  ["100.64.0.0", 10, "ipv4", "cgnat"],
  ["127.0.0.0", 8, "ipv4", "loopback"],
  ["169.254.0.0", 16, "ipv4", "link_local"],
  ["172.16.0.0", 12, "ipv4", "private"],
  ["192.0.0.0", 24, "ipv4", "reserved"],
  ["192.168.0.0", 16, "ipv4", "private"],
  ["198.18.0.0", 15, "ipv4", "reserved"],
  ["224.0.0.0", 4, "ipv4", "multicast"],
  ["240.0.0.0", 4, "ipv4", "reserved"],
  ["::", 128, "ipv6", "unspecified"],
  ["::1", 128, "ipv6", "loopback"],
  ["fc00::", 7, "ipv6", "private"],
  ["fe80::", 10, "ipv6", "link_local"],
  ["ff00::", 8, "ipv6", "multicast"],
];

const lists = new Map<string, BlockList>();
for (const [net, prefix, type, kind] of BLOCKED) {
  let l = lists.get(kind);
  if (!l) lists.set(kind, (l = new BlockList()));
  l.addSubnet(net, prefix, type);
}

/** IPv4 hidden in IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96) is judged as the IPv4 address. */
function embeddedV4(addr: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(addr);
  if (m) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(addr);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return undefined;
}

/** The reason an address is refused (`loopback`, `private`, `link_local`, `metadata`, ...), or undefined if allowed. */
export function blockedReason(address: string): string | undefined {
  const v4 = isIP(address) === 4 ? address : embeddedV4(address);
  const [addr, type] = v4 ? [v4, "ipv4" as const] : [address, "ipv6" as const];
  if (addr === "169.254.169.254" || addr.toLowerCase() === "fd00:ec2::254") return "metadata";
  for (const [kind, list] of lists) if (list.check(addr, type)) return kind;
  return undefined;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

export class TargetRefused extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(`target ${host} resolves to ${address} (${reason}); refused because notify.allow_private_targets is off`);
    this.name = "TargetRefused";
  }
}

/**
 * Resolves a URL host once and returns the address to connect to. Every resolved address must be
 * allowed (a name that also resolves into a private range is refused as a whole); the caller pins
 * the returned address for the connection so a second, rebinding lookup never happens.
 */
export async function resolveTarget(hostname: string, opts: { allowPrivate: boolean; resolver: Resolver }): Promise<ResolvedAddress> {
  const host = hostname.replace(/^\[|\]$/g, "");
  const literal = isIP(host);
  const addrs: ResolvedAddress[] = literal ? [{ address: host, family: literal === 6 ? 6 : 4 }] : await opts.resolver(host);
  if (addrs.length === 0) throw new Error(`${host} does not resolve`);
  if (!opts.allowPrivate) {
    for (const a of addrs) {
      const reason = blockedReason(a.address);
      if (reason) throw new TargetRefused(host, a.address, reason);
    }
  }
  return addrs[0]!;
}
