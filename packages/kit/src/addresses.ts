import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * One address classifier for every outgoing-target policy (webhook deliveries, discovery). The
 * ranges come from ipaddr.js, which tracks the IANA special-purpose registries, so no hand-kept
 * list here goes stale. What ipaddr.js reports as a transition form (IPv4-mapped, SIIT, NAT64,
 * 6to4, Teredo, IPv4-compatible) is decoded to the IPv4 it carries and judged as that address:
 * otherwise `::ffff:0:7f00:1` or `2002:7f00:1::` reach loopback while looking like IPv6 unicast.
 */

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/** Why an address is not public; `public` is the only reason a strict policy accepts. */
export type AddressReason =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "site_local"
  | "cgnat"
  | "multicast"
  | "broadcast"
  | "documentation"
  | "benchmarking"
  | "metadata"
  | "reserved";

export interface AddressClass {
  /** The address as given (zone id dropped). */
  address: string;
  /** The IPv4 address it carries when it is a transition form (judged instead of the IPv6 form). */
  embedded?: string;
  reason: AddressReason;
  public: boolean;
}

// ipaddr.js range names → the reasons operators read in errors. Unlisted ranges are "reserved".
const REASONS: Record<string, AddressReason> = {
  unicast: "public",
  unspecified: "unspecified",
  loopback: "loopback",
  private: "private",
  uniqueLocal: "private",
  linkLocal: "link_local",
  deprecatedSiteLocal: "site_local",
  carrierGradeNat: "cgnat",
  multicast: "multicast",
  broadcast: "broadcast",
  benchmarking: "benchmarking",
};

// ipaddr.js files the documentation networks (RFC 5737, RFC 3849, RFC 9637) under "reserved", which
// is already non-public; these only give the message a precise name.
const DOCUMENTATION = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20"].map((c) =>
  ipaddr.parseCIDR(c),
);
// 198.18.0.0/15 (RFC 2544) is also "reserved" in ipaddr.js's IPv4 table.
const BENCHMARKING_V4 = ipaddr.parseCIDR("198.18.0.0/15");
// Cloud instance metadata: named so a refusal says what was being reached.
const METADATA = new Set(["169.254.169.254", "fd00:ec2::254"]);
// Global unicast IPv6 is 2000::/3; ipaddr.js calls every unassigned address "unicast".
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");
// RFC 8215 local-use NAT64 prefix.
const LOCAL_NAT64 = ipaddr.parseCIDR("64:ff9b:1::/48");

const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/**
 * The IPv4 addresses an IPv6 transition form carries, each of which must be public for the
 * address to be. Returns undefined for plain IPv6.
 */
function embeddedV4(a: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const p = a.parts;
  switch (a.range()) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d (SIIT)
    case "rfc6052": // NAT64 64:ff9b::/96 and the local-use 64:ff9b:1::/48 (its /96 layout)
      return [v4(p[6]!, p[7]!)];
    case "6to4": // 2002:AABB:CCDD::/48
      return [v4(p[1]!, p[2]!)];
    case "teredo": // 2001:0:server(32):flags:port:~client(32)
      return [v4(p[2]!, p[3]!), v4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
    default:
      // IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks); :: and ::1 are their own ranges.
      if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7]! > 1)) return [v4(p[6]!, p[7]!)];
      return undefined;
  }
}

function reasonOf(a: Parsed): AddressReason {
  const text = a.toNormalizedString();
  if (METADATA.has(a.kind() === "ipv6" ? (a as ipaddr.IPv6).toRFC5952String() : text)) return "metadata";
  if (DOCUMENTATION.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits))) return "documentation";
  if (a.kind() === "ipv4" && a.match(BENCHMARKING_V4)) return "benchmarking";
  const reason = REASONS[a.range()] ?? "reserved";
  if (reason === "public" && a.kind() === "ipv6" && !a.match(GLOBAL_UNICAST_V6)) return "reserved";
  return reason;
}

/**
 * Classifies an IP address literal (strict dotted-quad or IPv6 text, as DNS answers and URL parsers
 * produce). Returns undefined when `text` is not an IP address.
 */
export function classifyAddress(text: string): AddressClass | undefined {
  const bare = text.replace(/^\[|\]$/g, "");
  if (isIP(bare) === 0) return undefined;
  const addr = ipaddr.parse(bare);
  const address = bare.replace(/%.*$/, "");
  if (addr.kind() === "ipv4") {
    const reason = reasonOf(addr);
    return { address, reason, public: reason === "public" };
  }
  const inner = embeddedV4(addr as ipaddr.IPv6);
  if (!inner) {
    const reason = reasonOf(addr);
    return { address, reason, public: reason === "public" };
  }
  // Every carried IPv4 must be public; the first that is not gives the reason.
  for (const e of inner) {
    const reason = reasonOf(e);
    if (reason !== "public") return { address, embedded: e.toString(), reason, public: false };
  }
  // A local-use NAT64 prefix (RFC 8215) is by definition not globally routed, whatever it carries.
  if (addr.match(LOCAL_NAT64)) return { address, embedded: inner[0]!.toString(), reason: "reserved", public: false };
  return { address, embedded: inner[inner.length - 1]!.toString(), reason: "public", public: true };
}

/** True only for a globally routable unicast address (after decoding transition forms). */
export function isPublicAddress(text: string): boolean {
  return classifyAddress(text)?.public ?? false;
}

/** A network in CIDR notation, parsed once. */
export interface Network {
  readonly cidr: string;
  contains(address: string): boolean;
}

/** True when `cidr` is a valid `address/prefix` (IPv4 or IPv6). */
export function isCidr(cidr: string): boolean {
  return ipaddr.isValidCIDR(cidr) && isIP(cidr.slice(0, cidr.lastIndexOf("/"))) !== 0;
}

/** Parses a CIDR; an IPv4 network also contains the IPv4-mapped IPv6 forms of its addresses. */
export function parseNetwork(cidr: string): Network {
  if (!isCidr(cidr)) throw new Error(`'${cidr}' is not a network in CIDR notation`);
  const [net, bits] = ipaddr.parseCIDR(cidr);
  return {
    cidr,
    contains(address) {
      const bare = address.replace(/^\[|\]$/g, "");
      if (isIP(bare) === 0) return false;
      const a = ipaddr.process(bare); // ::ffff:a.b.c.d → a.b.c.d
      return a.kind() === net.kind() && a.match(net, bits);
    },
  };
}
