import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { ALLOW_PRIVATE_TARGETS } from "@orch/contracts";
import { classifyAddress, settingName } from "@orch/kit";

/**
 * Outgoing-address policy. Channel URLs are chosen by admins, but a compromised or careless admin
 * must not turn the notify service into a probe of the cluster network or the cloud metadata
 * endpoint, so only public unicast addresses are allowed unless `notify.allow_private_targets` is
 * set. The classification (with IPv6 transition forms decoded) is the kit's, shared with discovery.
 */

/** The reason an address is refused (`loopback`, `private`, `link_local`, `metadata`, ...), or undefined if allowed. */
export function blockedReason(address: string): string | undefined {
  const c = classifyAddress(address);
  if (!c) return "not_an_address";
  return c.public ? undefined : c.reason;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** The setting a refusal names, with the environment variable that sets it. */
const PRIVATE_SETTING = settingName(ALLOW_PRIVATE_TARGETS.section, ALLOW_PRIVATE_TARGETS.key);

export class TargetRefused extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(`target ${host} resolves to ${address} (${reason}); refused because ${PRIVATE_SETTING} is off`);
    this.name = "TargetRefused";
  }
}

/**
 * Resolves a URL host once and returns the address to connect to. Every resolved address must be
 * allowed (a name that also resolves into a private range is refused as a whole); the caller pins
 * the returned address for the connection so a second, rebinding lookup never happens.
 */
export async function resolveTarget(
  hostname: string,
  opts: { allowPrivate: boolean; resolver: Resolver },
): Promise<ResolvedAddress> {
  const host = hostname.replace(/^\[|\]$/g, "");
  const literal = isIP(host);
  const addrs: ResolvedAddress[] = literal
    ? [{ address: host, family: literal === 6 ? 6 : 4 }]
    : await opts.resolver(host);
  if (addrs.length === 0) throw new Error(`${host} does not resolve`);
  if (!opts.allowPrivate) {
    for (const a of addrs) {
      const reason = blockedReason(a.address);
      if (reason) throw new TargetRefused(host, a.address, reason);
    }
  }
  return addrs[0]!;
}
