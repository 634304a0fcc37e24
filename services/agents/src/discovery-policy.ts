import { OrchError, classifyAddress, invalid, parseNetwork, type AddressReason, type Network } from "@orch/kit";

/**
 * Where unicast discovery may go. A discovery datagram is a UDP packet of our choosing sent from
 * inside the cluster, so `POST /discover` must not become a way to probe arbitrary hosts and ports:
 *  - the port is always agents.discovery_port (agents listen there; nothing else is probed);
 *  - inside agents.discovery_networks any operator may send (this is where the fleet lives);
 *  - outside them only an admin may, and only to ordinary unicast space (public, RFC 1918, CGNAT):
 *    loopback, link-local, multicast, broadcast, metadata and reserved addresses are reachable only
 *    when a configured network covers them.
 * The broadcast (no target) stays open to operators: it goes to the configured port only.
 */
export interface DiscoveryPolicy {
  port: number;
  networks: readonly Network[];
}

const ADMIN_REACHABLE: ReadonlySet<AddressReason> = new Set(["public", "private", "cgnat"]);

export function discoveryPolicy(cfg: {
  discovery_port: number;
  discovery_networks: readonly string[];
}): DiscoveryPolicy {
  return { port: cfg.discovery_port, networks: cfg.discovery_networks.map(parseNetwork) };
}

/** Why `address:port` may not receive a datagram from a caller with `role`, or undefined if it may. */
export function discoveryRefusal(
  policy: DiscoveryPolicy,
  address: string,
  port: number,
  role: string,
): OrchError | undefined {
  const target = { field: "target" };
  if (port !== policy.port) {
    const msg = `discovery datagrams go to port ${policy.port} (agents.discovery_port) only`;
    return invalid("discovery_port_not_allowed", msg, target);
  }
  if (policy.networks.some((n) => n.contains(address))) return undefined;
  const c = classifyAddress(address);
  if (!c || !ADMIN_REACHABLE.has(c.reason)) {
    const what = c ? `${c.reason}${c.embedded ? ` via ${c.embedded}` : ""}` : "not an address";
    const msg = `${address} (${what}) is reachable by discovery only inside agents.discovery_networks`;
    return new OrchError("PERMISSION_DENIED", "discovery_target_refused", msg, target);
  }
  if (role !== "admin") {
    const msg = "unicast discovery outside agents.discovery_networks requires the admin role";
    return new OrchError("PERMISSION_DENIED", "discovery_target_not_allowed", msg, target);
  }
  return undefined;
}
